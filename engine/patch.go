package engine

import (
	"context"
	"fmt"
	"slices"

	"stepthrough/engine/hooks"
	"stepthrough/engine/intervene"
)

// MaxPatchPasses bounds activation patching's forward passes (one per
// layer and position).
const MaxPatchPasses = 4096

// Patching is activation patching over the residual stream. A clean and
// a corrupted prompt of the same length make the model answer
// differently; for each layer and position the corrupted prompt runs
// again with that one vector of the residual stream taken from the clean
// run, and Restored says how much of the clean answer's lead that brings
// back: 0 none, 1 all of it.
type Patching struct {
	Good, Bad              int32       // the clean and the corrupted run's likeliest next tokens
	CleanDiff, CorruptDiff float64     // logit[Good] − logit[Bad] in each run
	Restored               [][]float64 // [layer][position]: (patched − corrupted diff) / (clean − corrupted diff)
}

// Patch runs activation patching with the model l (a backend that applies
// interventions: the CPU).
func (l *Loaded) Patch(ctx context.Context, clean, corrupt []int32) (*Patching, error) {
	c := l.Model.Config
	n := len(clean)
	switch {
	case n == 0 || len(corrupt) != n:
		return nil, fmt.Errorf("patching: the clean prompt is %d tokens and the corrupted one %d: they must be as long, and not empty", n, len(corrupt))
	case c.Layers*n > MaxPatchPasses:
		return nil, fmt.Errorf("patching: %d layers × %d positions is %d passes; the limit is %d", c.Layers, n, c.Layers*n, MaxPatchPasses)
	}
	s, err := l.NewSession(n)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	resid := make([][][]float32, c.Layers) // the clean run's residual stream after each layer, [layer][position]
	for i := range resid {
		resid[i] = make([][]float32, n)
	}
	watch := &hooks.Hooks{OnResidual: func(e hooks.Residual) {
		if e.After != "mlp" {
			return
		}
		for t := range e.N {
			resid[e.Layer][e.Pos0+t] = slices.Clone(e.X[t*c.Embd : (t+1)*c.Embd])
		}
	}}
	cleanLogits, err := evalFresh(hooks.WithHooks(ctx, watch), s, clean)
	if err != nil {
		return nil, err
	}
	corruptLogits, err := evalFresh(ctx, s, corrupt)
	if err != nil {
		return nil, err
	}
	p := &Patching{Good: Argmax(cleanLogits), Bad: Argmax(corruptLogits)}
	if p.Good == p.Bad {
		return nil, fmt.Errorf("patching: both prompts' likeliest next token is %q: choose prompts the model answers differently", l.Model.Tokenizer.Display(p.Good))
	}
	diff := func(x []float32) float64 { return float64(x[p.Good]) - float64(x[p.Bad]) }
	p.CleanDiff, p.CorruptDiff = diff(cleanLogits), diff(corruptLogits)
	for layer := range c.Layers {
		row := make([]float64, n)
		for pos := range n {
			if err := s.SetEdits(&intervene.Set{Edits: []intervene.Edit{patchAt(layer, pos, resid[layer][pos])}}); err != nil {
				return nil, err
			}
			x, err := evalFresh(ctx, s, corrupt)
			if err != nil {
				return nil, err
			}
			row[pos] = (diff(x) - p.CorruptDiff) / (p.CleanDiff - p.CorruptDiff)
		}
		p.Restored = append(p.Restored, row)
	}
	return p, nil
}

// evalFresh reads ids from an empty cache and returns a copy of the last
// position's logits.
func evalFresh(ctx context.Context, s *Session, ids []int32) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.Reset()
	x, err := s.Eval(ctx, ids)
	return slices.Clone(x), err
}

// Residuals reads ids from an empty cache and returns the residual
// stream after layer (from 0) at every position: what patching copies and
// steering averages. The session is left holding ids.
func (s *Session) Residuals(ctx context.Context, layer int, ids []int32) ([][]float32, error) {
	c := s.Model.Config
	if layer < 0 || layer >= c.Layers {
		return nil, fmt.Errorf("residuals: the model has layers 1 to %d", c.Layers)
	}
	out := make([][]float32, len(ids))
	watch := &hooks.Hooks{OnResidual: func(e hooks.Residual) {
		if e.Layer != layer || e.After != "mlp" {
			return
		}
		for t := range e.N {
			out[e.Pos0+t] = slices.Clone(e.X[t*c.Embd : (t+1)*c.Embd])
		}
	}}
	if _, err := evalFresh(hooks.WithHooks(ctx, watch), s, ids); err != nil {
		return nil, err
	}
	return out, nil
}

// SteerVector is a steering direction at layer: the mean residual stream
// after it over the positions of toward, minus the mean over those of
// away (each text's own tokens, without a BOS).
func (s *Session) SteerVector(ctx context.Context, layer int, toward, away []int32) ([]float32, error) {
	switch {
	case len(toward) == 0 || len(away) == 0:
		return nil, fmt.Errorf("steering: both texts need tokens")
	case max(len(toward), len(away)) > s.Capacity():
		return nil, fmt.Errorf("steering: texts of %d and %d tokens (at most %d here)", len(toward), len(away), s.Capacity())
	}
	mean := func(ids []int32) ([]float64, error) {
		rows, err := s.Residuals(ctx, layer, ids)
		if err != nil {
			return nil, err
		}
		m := make([]float64, s.Model.Config.Embd)
		for _, r := range rows {
			for i, v := range r {
				m[i] += float64(v) / float64(len(rows))
			}
		}
		return m, nil
	}
	a, err := mean(toward)
	if err != nil {
		return nil, err
	}
	b, err := mean(away)
	if err != nil {
		return nil, err
	}
	v := make([]float32, len(a))
	for i := range v {
		v[i] = float32(a[i] - b[i])
	}
	return v, nil
}

// SteerEdit is st as an edit of the residual stream: its direction
// (SteerVector of its two texts, read on s, which is left empty after)
// added after its layer at every position, times its strength.
func (s *Session) SteerEdit(ctx context.Context, st intervene.Steer) (intervene.Edit, error) {
	defer s.Reset()
	if st.Layer < 0 || st.Layer >= s.Model.Config.Layers {
		return intervene.Edit{}, fmt.Errorf("steering after layer %d: the model has layers 1 to %d", st.Layer+1, s.Model.Config.Layers)
	}
	tk := s.Model.Tokenizer
	v, err := s.SteerVector(ctx, st.Layer, tk.EncodeIDs(st.Toward, false), tk.EncodeIDs(st.Away, false))
	if err != nil {
		return intervene.Edit{}, err
	}
	return intervene.Edit{Layer: st.Layer, Site: intervene.Resid, Pos: -1, Op: intervene.Add, Factor: st.Strength, Vector: v}, nil
}

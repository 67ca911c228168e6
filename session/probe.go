package session

import (
	"context"
	"slices"

	"stepthrough/engine"
	"stepthrough/engine/hooks"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
	"stepthrough/engine/trace"
	"stepthrough/spec"
)

// Probe is what a generation outside the Explorer (an API request's
// "stepthrough" extension) records of each token's forward pass, at the
// position the token was predicted from: the pass the Explorer shows as
// that token's step, read by the same hooks.
type Probe struct {
	Lens   int   // the likeliest tokens per layer under the logit lens (0: no lens)
	Layers []int // attention: these layers' (from 0) …
	Heads  []int // … these heads' weights (from 0)
	Norms  bool  // the residual stream's L2 norm after each layer
}

// asks reports whether p records anything (else no hook is set).
func (p Probe) asks() bool { return p.Lens > 0 || len(p.Layers) > 0 || p.Norms }

// Pass is what one forward pass computed at its last position.
type Pass struct {
	Position int
	// Lens is each layer's lens, from layer 0 (the last is the logits).
	Lens []LensLayer
	// Attention is each (layer, head)'s weights over positions 0 to
	// Position: Probe.Layers in order, Probe.Heads within each.
	Attention [][]float32
	Norms     []float32 // after each layer (its MLP added)
}

// LensLayer is one layer's lens at a position: its likeliest tokens (p
// at temperature 1, as the Explorer's grid) and the rank, from 1, of the
// last layer's likeliest token under it (the grid's final rank).
type LensLayer struct {
	Top       []trace.Candidate
	FinalRank int
}

// Generate reads prompt on lm with a run's interventions (iv, as
// spec.Run.Checked read them from links and lessons, applied as the
// Explorer applies them: RunEdits) and generates from it with g (its sampler accepts the prompt
// first, as the Explorer's does), recording p: emit sees each token with
// the logits it was drawn from and the pass that computed them. It
// returns why generation ended. Errors of the interventions are *Error.
func Generate(ctx context.Context, lm *engine.Loaded, iv spec.Interventions, prompt []int32, p Probe, g engine.Gen, emit func(id int32, logits []float32, pass *Pass) error) (string, error) {
	edits, err := RunEdits(ctx, lm, iv)
	if err != nil {
		return "", err
	}
	es, err := lm.NewSession(len(prompt) + g.MaxTokens)
	if err != nil {
		return "", err
	}
	defer es.Close()
	if err := es.Fits(len(prompt), g.MaxTokens); err != nil {
		return "", errorf("%v", err)
	}
	if err := es.SetEdits(edits); err != nil {
		return "", errorf("%v", err)
	}
	rec := newProbeRecorder(p, lm.Model.Config)
	hctx := ctx
	if p.asks() {
		hctx = hooks.WithHooks(hctx, rec.hooks())
	}
	logits, err := es.Eval(hctx, prompt)
	if err != nil {
		return "", err
	}
	g.Sampler.Accept(prompt...)
	g.Emit = func(id int32, logits []float32) error { return emit(id, logits, rec.take()) }
	return es.Continue(hctx, logits, g)
}

// probeRecorder fills a Pass from the hooks of one pass at a time.
type probeRecorder struct {
	p      Probe
	layers int
	cur    *Pass
	lens   [][]float32 // each layer's lens row of the pass, until the last layer's ranks them
}

func newProbeRecorder(p Probe, c *model.Config) *probeRecorder {
	return &probeRecorder{p: p, layers: c.Layers}
}

// pass is the pass being recorded.
func (r *probeRecorder) pass() *Pass {
	if r.cur == nil {
		r.cur = &Pass{}
		if r.p.Lens > 0 {
			r.cur.Lens = make([]LensLayer, r.layers)
		}
		if len(r.p.Layers) > 0 {
			r.cur.Attention = make([][]float32, len(r.p.Layers)*len(r.p.Heads))
		}
		if r.p.Norms {
			r.cur.Norms = make([]float32, r.layers)
		}
	}
	return r.cur
}

// take returns the pass recorded since the last take.
func (r *probeRecorder) take() *Pass {
	p := r.pass()
	r.cur = nil
	return p
}

func (r *probeRecorder) hooks() *hooks.Hooks {
	h := &hooks.Hooks{}
	if r.p.Lens > 0 {
		h.OnLens, h.LensRows = r.onLens, 1
		r.lens = make([][]float32, r.layers)
	}
	if len(r.p.Layers) > 0 {
		h.OnAttention = r.onAttention
	}
	if r.p.Norms {
		h.OnResidual = r.onResidual
	}
	return h
}

func (r *probeRecorder) onLens(e hooks.Lens) {
	if e.Layer < 0 || e.Layer >= r.layers {
		return
	}
	row := e.Logits[(e.N-1)*e.Vocab : e.N*e.Vocab]
	ps := r.pass()
	ps.Position = e.Pos0 + e.N - 1
	ps.Lens[e.Layer].Top = trace.Likeliest(row, r.p.Lens)
	r.lens[e.Layer] = append(r.lens[e.Layer][:0], row...)
	if e.Layer != r.layers-1 || len(ps.Lens[e.Layer].Top) == 0 { // none: every logit NaN (the pass then fails)
		return
	}
	final := ps.Lens[e.Layer].Top[0].ID
	for l, x := range r.lens {
		if len(x) > 0 {
			ps.Lens[l].FinalRank = sample.Rank(x, final)
		}
	}
}

func (r *probeRecorder) onAttention(a hooks.Attention) {
	li := slices.Index(r.p.Layers, a.Layer)
	if li < 0 {
		return
	}
	t := a.N - 1
	visible := a.Pos0 + t + 1
	ps := r.pass()
	ps.Position = a.Pos0 + t
	for hi, h := range r.p.Heads {
		row := (t*a.Heads + h) * a.Ctx
		ps.Attention[li*len(r.p.Heads)+hi] = slices.Clone(a.Weights[row : row+visible])
	}
}

func (r *probeRecorder) onResidual(x hooks.Residual) {
	if x.After != "mlp" || x.Layer < 0 || x.Layer >= r.layers {
		return
	}
	ps := r.pass()
	ps.Position = x.Pos0 + x.N - 1
	ps.Norms[x.Layer] = x.Norms[x.N-1]
}

package session

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"stepthrough/engine/hooks"
	"stepthrough/engine/trace"
	"stepthrough/spec"
)

// Beside another weight type (spec.View.Vs): a session of its own, on the
// run's model converted to that type (NAME@TYPE, the registry's
// conversion), reads the tokens the viewed token step's pass read, with
// the run's interventions, and records that pass as the run's trace
// records its own, so every stage has its counterpart under the other
// type. It keeps its cache between token steps: stepping on reads only
// the new positions.

// Versus is the viewed token step's pass under another weight type.
type Versus struct {
	Type  string      // the type, as spec.View.Vs names it
	Model string      // the model that computed it (NAME@TYPE)
	Step  *trace.Step // the pass, recorded as the run's own (without its sampler)
}

// setVs is the "vs" action: show the values under a weight type beside
// the run's from now on ("" or none: stop). A type the model cannot be
// converted to is refused and the view stays as it was.
func (s *Session) setVs(ctx context.Context, get spec.Getter) error {
	v, _ := get("vs")
	r := s.spec()
	r.View.Vs = spec.VsName(v)
	if err := r.Validate(); err != nil {
		return err
	}
	prev := s.view.Vs
	s.view.Vs = r.View.Vs
	if len(s.cur.Steps) == 0 {
		return nil
	}
	if err := s.reserveBeside(); err != nil {
		s.view.Vs = prev
		return err
	}
	if s.view.Vs == "" {
		return nil
	}
	step, _ := s.cur.Position()
	if _, err := s.versus(ctx, step); err != nil {
		s.view.Vs = prev
		_ = s.reserveBeside() // back to what was held: it fitted
		return err
	}
	return nil
}

// compareWith shows the run beside vs from here on, or, when the run's
// model cannot be compared with it (an unknown type, a model too large to
// convert), without it and a notice saying why.
func (s *Session) compareWith(ctx context.Context, vs string) {
	s.view.Vs = vs
	err := s.reserveBeside()
	if err == nil {
		step, _ := s.cur.Position()
		_, err = s.versus(ctx, step)
	}
	if err != nil {
		s.view.Vs, s.notice = "", err.Error()
		_ = s.reserveBeside() // less than before: it fits
	}
}

// reserveBeside sets the run's reservation in the pool to its own bytes
// and those of the sessions beside it as the run and the view stand: the
// interventions' baseline, the comparison with s.view.Vs. ErrBusy, or why
// the comparison cannot fit at all, when the budget has no room; nothing
// to do without a run or a pool.
func (s *Session) reserveBeside() error {
	if s.pool == nil || s.m == nil || len(s.cur.Steps) == 0 {
		return nil
	}
	positions := len(s.Prompt) + s.run.MaxTokens
	beside := besideBytes(s.m, recordingFor(s.m.Config), positions, s.edits != nil, s.view.Vs != "")
	if s.view.Vs == "" {
		return s.pool.reserve(s, s.runBytes+beside)
	}
	return s.pool.reserveFor(s, s.runBytes+beside, "this run beside "+s.view.Vs,
		"its KV cache and trace, and the comparison's", "use a shorter prompt or fewer new tokens, or compare without another type")
}

// vsModel is the model the comparison runs: the run's model file
// converted to the view's type.
func (s *Session) vsModel() string {
	file, _, _ := strings.Cut(s.run.Model, "@")
	return file + "@" + s.view.Vs
}

// versus is token step step's pass under the view's type (nil without
// one, or in a speculative run, whose steps are rounds of two models).
func (s *Session) versus(ctx context.Context, step int) (*Versus, error) {
	if s.view.Vs == "" || s.es == nil || s.dec != nil || step < 0 || step >= len(s.cur.Steps) {
		return nil, nil
	}
	name, key := s.vsModel(), s.vsModel()+"|"+s.run.Backend
	if s.vsLast != nil && s.vesKey == key && s.vsAt == step {
		return s.vsLast, nil
	}
	if s.ves == nil || s.vesKey != key {
		lm, err := s.eng.Engine(name, s.run.Backend)
		if err != nil {
			return nil, errorf("compare with %s: %v", s.view.Vs, err)
		}
		es, err := lm.NewSession(0)
		if err != nil {
			return nil, errorf("compare with %s: %v", s.view.Vs, err)
		}
		s.closeVersus()
		s.ves, s.vesKey = es, key
	}
	st, err := s.versusPass(ctx, step)
	if err != nil {
		s.ves.Reset() // its cache is in doubt: the next step reads from the start
		return nil, errorf("compare with %s: the engine failed: %v", s.view.Vs, err)
	}
	s.vsLast, s.vsAt = &Versus{Type: s.view.Vs, Model: name, Step: st}, step
	return s.vsLast, nil
}

// versusPass reads the positions before token step step's pass (unless
// the comparison's cache holds exactly them) and then that pass's own,
// recording it.
func (s *Session) versusPass(ctx context.Context, step int) (*trace.Step, error) {
	from, to := s.passSpan(step)
	seq := s.Written(-1)[:to]
	edits := s.edits
	if edits != nil && len(edits.Edits) == 0 {
		edits = nil
	}
	if s.ves.Edits() != edits || !slices.Equal(s.ves.Tokens(), seq[:from]) {
		if err := s.ves.SetEdits(edits); err != nil {
			return nil, err
		}
		s.ves.Reset()
		if from > 0 {
			if _, err := s.ves.Eval(ctx, seq[:from]); err != nil {
				return nil, err
			}
		}
	}
	opt := recordingFor(s.m.Config)
	opt.Lens, opt.LensPositions = 0, 0 // the comparison draws no lens
	rec := trace.NewRecorder(opt)
	if _, err := s.ves.Eval(hooks.WithHooks(ctx, rec.Hooks()), seq[from:to]); err != nil {
		return nil, err
	}
	if steps := rec.Steps(); len(steps) == 1 {
		return steps[0], nil
	}
	return nil, fmt.Errorf("the pass recorded %d steps", len(rec.Steps()))
}

// passSpan is the positions token step step's pass read: [from, to).
func (s *Session) passSpan(step int) (from, to int) {
	to = len(s.Prompt)
	for j := range step {
		from = to
		to += 1 + len(s.Inserts[j])
	}
	return from, to
}

func (s *Session) closeVersus() {
	if s.ves != nil {
		s.ves.Close()
		s.ves, s.vesKey = nil, ""
	}
}

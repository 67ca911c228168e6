package session

import (
	"context"
	"slices"

	"stepthrough/engine"

	"stepthrough/engine/intervene"
	"stepthrough/spec"
)

// Interventions in the Explorer (spec.Run.Ablate): every pass of the run
// computes with the edits; beside it a baseline session, on the same
// model, reads the same tokens without them, so the view shows each next-
// token distribution before and after.

// toggleEdit switches one written edit ("L1H2", "L3mlp") in or out of the
// run's interventions (clear: all out) and reruns to the same view with
// the same seed.
func (s *Session) toggleEdit(ctx context.Context, get spec.Getter) error {
	if len(s.cur.Steps) == 0 {
		return errorf("run a prompt first")
	}
	r := s.spec()
	var edits []intervene.Edit // the run's own set is shared with its trace: edit a copy
	if r.Ablate != nil {
		edits = slices.Clone(r.Ablate.Edits)
	}
	if v, ok := get("clear"); ok && v != "" {
		edits = nil
	} else {
		v, _ := get("toggle")
		one, err := intervene.Parse(v)
		if err != nil || len(one.Edits) != 1 {
			return &spec.Error{Param: "toggle", Value: v, Allowed: "one head, unit or sublayer, written L1H2, L2U7, L1attn or L2mlp"}
		}
		e := one.Edits[0]
		if i := slices.IndexFunc(edits, func(x intervene.Edit) bool { return sameSite(x, e) }); i >= 0 {
			edits = slices.Delete(edits, i, i+1)
		} else {
			edits = append(edits, e)
		}
	}
	r.Ablate = nil
	if len(edits) > 0 {
		r.Ablate = &intervene.Set{Edits: edits}
	}
	return s.open(ctx, r) // which validates r
}

// sameSite reports whether two edits touch the same site.
func sameSite(a, b intervene.Edit) bool {
	return a.Layer == b.Layer && a.Site == b.Site && a.Index == b.Index && a.Pos == b.Pos
}

// baseline is token step step's next-token logits without the run's
// edits (nil for a run without edits): the baseline session reads the
// same tokens as that step had read, once per step viewed.
func (s *Session) baseline(ctx context.Context, step int) ([]float32, error) {
	if s.edits == nil || s.es == nil || step < 0 || step >= len(s.cur.Steps) {
		return nil, nil
	}
	if s.base != nil && s.baseStep == step {
		return s.base, nil
	}
	if s.bes == nil || s.besKey != s.esKey {
		bes, err := s.lm.NewSession(0)
		if err != nil {
			return nil, err
		}
		s.closeBaseline()
		s.bes, s.besKey = bes, s.esKey
	}
	n := len(s.Prompt) // the positions token step step's pass had read, its own included
	for j := range step {
		n += 1 + len(s.Inserts[j])
	}
	s.bes.Reset()
	logits, err := s.bes.Eval(ctx, s.Written(-1)[:n])
	if err != nil {
		return nil, err
	}
	s.base, s.baseStep = slices.Clone(logits), step
	return s.base, nil
}

func (s *Session) closeBaseline() {
	if s.bes != nil {
		s.bes.Close()
		s.bes = nil
	}
}

// fits refuses a run whose prompt, with its new tokens, does not fit
// lm's context before the passes of its mean ablation and steering run
// (those refuse a text past the context themselves, before their passes).
func fits(lm *engine.Loaded, r spec.Run) error {
	tk, n := lm.Model.Tokenizer, lm.Context()
	prompt := len(tk.EncodeIDs(r.Prompt, true))
	if r.Special {
		prompt = len(tk.EncodeSpecial(r.Prompt, true))
	}
	if prompt == 0 || r.Prompt == "" { // BOS alone is not a prompt
		return errorf("the prompt has no tokens: type something")
	}
	if prompt+r.MaxTokens > n {
		return errorf("the prompt is %d tokens; with %d new ones that exceeds the context of %d", prompt, r.MaxTokens, n)
	}
	return nil
}

// RunEdits are a run's interventions (spec.Run.Interventions, as read
// once) for lm's model, as the Explorer, the API's generations and a
// lesson's claims apply them: checked against its shape, with the mean
// ablation's means and the steering's direction read on the intact model
// (engine.ResolveEdits). nil: none. Errors are *Error.
func RunEdits(ctx context.Context, lm *engine.Loaded, iv spec.Interventions) (*intervene.Set, error) {
	if err := iv.Check(lm.Model.Config.EditShape()); err != nil {
		return nil, errorf("%v", err)
	}
	edits, err := lm.ResolveEdits(ctx, iv.Edits, iv.Sources)
	if err != nil {
		return nil, errorf("%v", err)
	}
	return edits, nil
}

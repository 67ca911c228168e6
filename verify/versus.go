package verify

import (
	"fmt"

	"stepthrough/engine"
	"stepthrough/engine/quantlens"
	"stepthrough/engine/trace"
	"stepthrough/lessons"
)

// The claims beside another weight type (a step's vs:), decided on the
// same two passes the page shows: the step's trace and the session's
// comparison (session.Versus), at the pass's last position.

// versusPasses are the step's pass and its pass under the other type.
func (s *checker) versusPasses(st lessons.Step) (own, other *trace.Step, err error) {
	if s.Versus == nil || s.Versus.Step == nil {
		return nil, nil, fmt.Errorf("the step compares with no other type (vs:)")
	}
	if st.Token >= len(s.Cursor.Steps) {
		return nil, nil, fmt.Errorf("the run has no token step %d", st.Token)
	}
	return s.Cursor.Steps[st.Token], s.Versus.Step, nil
}

// residualDrift is the relative error and cosine of the residual stream
// after layer (0-based; its MLP) at the pass's last position.
func residualDrift(own, other *trace.Step, layer int) (rel, cos float64, err error) {
	var a, b *trace.Residual
	for _, L := range own.Layers {
		if L.Index == layer {
			a = L.ResidMLP
		}
	}
	for _, L := range other.Layers {
		if L.Index == layer {
			b = L.ResidMLP
		}
	}
	if a == nil || b == nil || len(a.X) == 0 || len(a.X) != len(b.X) {
		return 0, 0, fmt.Errorf("the pass has no residual stream after layer %d", layer+1)
	}
	rel, cos = quantlens.RelErrCos(a.X[len(a.X)-1], b.X[len(b.X)-1])
	return rel, cos, nil
}

// checkVersus decides drift, cosine, driftmost and vstop.
func (s *checker) checkVersus(st lessons.Step, c lessons.Claim) (string, error) {
	own, other, err := s.versusPasses(st)
	if err != nil {
		return "", err
	}
	typ := s.Versus.Type
	switch c.Kind {
	case "drift", "cosine":
		rel, cos, err := residualDrift(own, other, c.Block-1)
		if err != nil {
			return "", err
		}
		got := map[string]float64{"drift": rel, "cosine": cos}[c.Kind]
		return fmt.Sprintf("%.4f", got), want(c.Holds(got), "after layer %d under %s the %s is %.4f", c.Block, typ, map[string]string{"drift": "relative error", "cosine": "cosine similarity"}[c.Kind], got)
	case "driftmost":
		most, largest := -1, -1.0
		for l := range s.Model.Config.Layers {
			rel, _, err := residualDrift(own, other, l)
			if err != nil {
				return "", err
			}
			if rel > largest {
				most, largest = l, rel
			}
		}
		return fmt.Sprint(most + 1), want(most+1 == c.Block, "under %s the stream drifts most after layer %d (%.4f)", typ, most+1, largest)
	}
	tk := s.Model.Tokenizer
	ids := tk.EncodeSpecial(c.Text, false)
	if len(ids) != 1 {
		return "", fmt.Errorf("%q is %d tokens, not one", c.Text, len(ids))
	}
	if other.Logits == nil {
		return "", fmt.Errorf("the pass under %s has no logits", typ)
	}
	top := engine.Argmax([]float32(other.Logits.Logits))
	return fmt.Sprintf("%q", tk.Display(top)), want(top == ids[0], "under %s the top token is %q", typ, tk.Display(top))
}

package present

import (
	"context"
	"math"
	"testing"

	"stepthrough/engine/registry/registrytest"
	"stepthrough/engine/sample"
	"stepthrough/session"
	"stepthrough/views"
)

// Switching a head off from the attention panel reruns the step with the
// head off: the Explorer shows the run's next-token distribution before
// (the same step of a run without the edit) and after (the trace's, with
// it), the model map marks the layer, and switching it back restores the
// run; the link carries the edit.
func TestInterveneFromThePanel(t *testing.T) {
	reg := registrytest.Lesson(t)
	ctx := context.Background()
	r := run("The capital of France is")
	r.Sampler.Temperature = 0
	plain := session.New("plain", "", reg)
	defer plain.Close()
	if err := plain.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	se := session.New("edit", "", reg)
	defer se.Close()
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := se.Act(ctx, "goto", getter(map[string]string{"stage": "attention", "layer": "2"})); err != nil {
		t.Fatal(err)
	}
	a, ok := Explorer(se).Panel.(*views.AttentionPanel)
	if !ok || a.Toggle != "L2H1" || a.HeadOff {
		t.Fatalf("attention panel: %+v", a)
	}
	toggle := getter(map[string]string{"toggle": a.Toggle})
	if err := se.Act(ctx, "ablate", toggle); err != nil {
		t.Fatal(err)
	}
	e := Explorer(se)
	if e.Edits == nil || e.Edits.Edits != "L2H1" || len(e.Edits.Items) != 1 || e.Edits.Items[0] != "layer 2, head 1 switched off" {
		t.Fatalf("edit effect %+v", e.Edits)
	}
	if a, _ := e.Panel.(*views.AttentionPanel); a == nil || !a.HeadOff || e.Current.Name != "attention" || e.Current.Layer != 1 {
		t.Errorf("after the rerun: at %+v, head off %v", e.Current, a != nil && a.HeadOff)
	}
	if len(e.Map.Off) != 1 || !e.Map.Off["attention-2"] {
		t.Errorf("the map marks %v, want attention-2", e.Map.Off)
	}
	// before: the plain run's probabilities; after: the trace's
	before := sample.Probabilities(plain.Snapshot().Cursor.Steps[0].Logits.Logits, 1)
	after := sample.Probabilities(se.Snapshot().Cursor.Steps[0].Logits.Logits, 1)
	top := sample.TopN(before, 1)[0]
	if math.Abs(e.Edits.WasP-float64(before[top])) > 1e-6 || math.Abs(e.Edits.NowP-float64(after[top])) > 1e-6 {
		t.Errorf("the top token's p: shown %.6f → %.6f, engine %.6f → %.6f", e.Edits.WasP, e.Edits.NowP, before[top], after[top])
	}
	if e.Edits.KL <= 0 || e.Edits.WasP == e.Edits.NowP {
		t.Errorf("switching the head off changed nothing: KL %g", e.Edits.KL)
	}
	if se.Spec().Ablate != "L2H1" {
		t.Errorf("the link carries %q", se.Spec().Ablate)
	}
	// back on: the run is the plain one again
	if err := se.Act(ctx, "ablate", toggle); err != nil {
		t.Fatal(err)
	}
	if e := Explorer(se); e.Edits != nil || se.Spec().Ablate != "" {
		t.Errorf("after switching back: %+v, %q", e.Edits, se.Spec().Ablate)
	}
	if err := se.Act(ctx, "ablate", getter(map[string]string{"toggle": "L9H1"})); err == nil {
		t.Error("a head of layer 9 of a smaller model switched off")
	}
}

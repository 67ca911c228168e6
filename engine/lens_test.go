package engine_test

import (
	"context"
	"math"
	"testing"

	"stepthrough/engine"
	"stepthrough/engine/hooks"
	"stepthrough/engine/trace"
)

// A trace that asks for the logit lens keeps every layer's: its last
// layer's last row is the logits, and its likeliest tokens are sorted
// probabilities at T = 1; a trace that does not ask gets none (and the
// pass computes none).
func TestTraceKeepsTheLens(t *testing.T) {
	m := lessonModel()
	defer m.Close()
	s, err := engine.NewSession(m, engine.Options{Backend: "cpu", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids := m.Tokenizer.EncodeIDs("The capital of France is", true)
	rec := trace.NewRecorder(trace.Options{Lens: 3, LastPositions: 4})
	logits, err := s.Eval(hooks.WithHooks(context.Background(), rec.Hooks()), ids)
	if err != nil {
		t.Fatal(err)
	}
	st := rec.Steps()[0]
	if len(st.Layers) != m.Config.Layers {
		t.Fatalf("%d layers recorded", len(st.Layers))
	}
	for _, L := range st.Layers {
		if L.Lens == nil || len(L.Lens.Top) != 4 || len(L.Lens.Top[3]) != 3 || len(L.Lens.Last) != m.Config.Vocab {
			t.Fatalf("layer %d: lens %+v", L.Index+1, L.Lens)
		}
		for _, top := range L.Lens.Top {
			if !(top[0].P >= top[1].P && top[1].P >= top[2].P) {
				t.Errorf("layer %d: lens candidates out of order %+v", L.Index+1, top)
			}
		}
	}
	last := st.Layers[len(st.Layers)-1].Lens
	var worst float64
	for i, v := range logits {
		worst = max(worst, math.Abs(float64(v-last.Last[i])))
	}
	if worst > 1e-4 || last.Top[3][0].ID != engine.Argmax(logits) {
		t.Errorf("the last layer's lens differs from the logits by %g; its top %d, argmax %d", worst, last.Top[3][0].ID, engine.Argmax(logits))
	}
	plain := trace.NewRecorder(trace.Options{})
	if plain.Hooks().OnLens != nil {
		t.Error("a trace that keeps no lens asks for one")
	}
}

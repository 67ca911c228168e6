package engine

import (
	"context"
	"math"
	"slices"
	"testing"
)

// Sessions batched in one pass get the logits each gets alone, on both
// backends (the CPU batches rows; Vulkan runs them in turn), and go on
// alone from where the batch left them. A wrong batch changes nothing.
func TestBatchEqualsAlone(t *testing.T) {
	m := stories(t)
	for _, backend := range []string{"cpu", "vulkan"} {
		t.Run(backend, func(t *testing.T) {
			l := loadOn(t, m, backend)
			prompts := [][]int32{
				m.Tokenizer.EncodeIDs("Once upon a time", true),
				m.Tokenizer.EncodeIDs("The cat sat on the mat and", true),
				m.Tokenizer.EncodeIDs("Lily", true),
			}
			var alone [][]float32
			for _, p := range prompts {
				s := newSession(t, l, 0)
				first := eval(t, s, p...)
				alone = append(alone, append(first, eval(t, s, 42)...))
			}
			var items []BatchItem
			for _, p := range prompts {
				items = append(items, BatchItem{Session: newSession(t, l, 0), Tokens: p})
			}
			out := make([][]float32, len(items))
			ctx := context.Background()
			if err := l.Batch(ctx, items, out); err != nil {
				t.Fatal(err)
			}
			got := make([][]float32, len(items))
			for i := range out {
				got[i] = slices.Clone(out[i])
				items[i].Tokens = []int32{42}
			}
			if err := l.Batch(ctx, items, out); err != nil {
				t.Fatal(err)
			}
			V := m.Config.Vocab
			for i := range items {
				got[i] = append(got[i], out[i]...)
				if d := maxDiff(got[i], alone[i]); d > 1e-5 {
					t.Errorf("session %d: batched logits differ from alone by %g", i, d)
				}
				if p := items[i].Session.Pos(); p != len(prompts[i])+1 {
					t.Errorf("session %d at position %d, want %d", i, p, len(prompts[i])+1)
				}
				if len(got[i]) != 2*V {
					t.Fatalf("session %d: %d logits", i, len(got[i]))
				}
			}
			bad := []BatchItem{{Session: items[0].Session, Tokens: []int32{5}}, {Session: items[0].Session, Tokens: []int32{6}}}
			if err := l.Batch(ctx, bad, out[:2]); err == nil {
				t.Error("the same session twice: no error")
			}
			if p := items[0].Session.Pos(); p != len(prompts[0])+1 {
				t.Errorf("a refused batch moved session 0 to %d", p)
			}
		})
	}
}

func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var w float64
	for i := range a {
		w = max(w, math.Abs(float64(a[i])-float64(b[i])))
	}
	return w
}

package cpu

import (
	"context"
	"slices"
	"testing"

	"stepthrough/engine/hooks"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// lensOf runs ids afresh with a lens hook asking for rows (0: all) and
// returns each layer's events, their logits copied.
func lensOf(t *testing.T, r *Runner, ids []int32, rows int) []hooks.Lens {
	t.Helper()
	var got []hooks.Lens
	h := &hooks.Hooks{LensRows: rows, OnLens: func(e hooks.Lens) {
		e.Logits = slices.Clone(e.Logits)
		got = append(got, e)
	}}
	r.Reset()
	if _, err := r.Forward(hooks.WithHooks(context.Background(), h), ids, false); err != nil {
		t.Fatal(err)
	}
	return got
}

// The lens gives the last LensRows rows of a pass, the same values as
// the lens of every row; and a buffer as large as a huge vocabulary's
// lens is not kept by the model (shared by every session) once its pass
// is over.
func TestLensRows(t *testing.T) {
	m, err := model.Random(model.SynthOptions{Arch: "llama", Embd: 16, Layers: 2, Heads: 2, FFN: 32, Vocab: 1 << 16, Context: 64, Type: quant.F32, Tied: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(m, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ids := make([]int32, 24) // 24 rows × 65,536: 1.5M values, over hookKeep
	for i := range ids {
		ids[i] = int32(100 + i)
	}
	V := m.Config.Vocab
	all := lensOf(t, r, ids, 0)
	for _, tc := range []struct{ ask, want int }{{0, 24}, {3, 3}, {1, 1}, {24, 24}, {99, 24}} {
		got := lensOf(t, r, ids, tc.ask)
		if len(got) != m.Config.Layers {
			t.Fatalf("LensRows %d: %d events", tc.ask, len(got))
		}
		for l, e := range got {
			first := len(ids) - tc.want
			if e.N != tc.want || e.Pos0 != first {
				t.Fatalf("LensRows %d, layer %d: %d rows from %d, want %d from %d", tc.ask, l, e.N, e.Pos0, tc.want, first)
			}
			if d := maxAbsDiff(e.Logits, all[l].Logits[first*V:]); d > 1e-5 { // one row takes another kernel
				t.Errorf("LensRows %d, layer %d: differs from the lens of every row by %g", tc.ask, l, d)
			}
		}
		if c := cap(r.l.f.hk.lens); c > hookKeep {
			t.Errorf("LensRows %d: the model keeps a lens buffer of %d values after the pass", tc.ask, c)
		}
	}
}

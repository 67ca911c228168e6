package cpu

import (
	"context"
	"testing"

	"stepthrough/engine/hooks"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// A pass whose context is done is not computed, one token or a prompt:
// the caller's error comes back and no hook sees the pass (a beam or a
// speculative lane, which run passes of one token, stops at its next).
func TestForwardStopsWithItsContext(t *testing.T) {
	m, err := model.Random(model.SynthOptions{Arch: "llama", Embd: 16, Layers: 1, Heads: 2, FFN: 32, Vocab: 512, Context: 64, Type: quant.F32, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(m, Options{Threads: 1, MaxBatch: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, tc := range []struct {
		name string
		ids  []int32
	}{{"one token", []int32{5}}, {"a prompt in one chunk", []int32{5, 6, 7}}, {"a prompt in three chunks", []int32{5, 6, 7, 8, 9, 10, 11, 12, 13}}} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		passes := 0
		h := &hooks.Hooks{OnEmbed: func(hooks.Embed) { passes++ }}
		r.Reset()
		if _, err := r.Forward(hooks.WithHooks(ctx, h), tc.ids, false); err != context.Canceled || passes != 0 {
			t.Errorf("%s: %v after %d chunks computed, want context.Canceled and none", tc.name, err, passes)
		}
	}
}

package engine

import (
	"context"
	"testing"

	"stepthrough/engine/hooks"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/engine/trace"
)

// BenchmarkDecodeHooks measures one decode step (tg) of the stories15M
// shape with no hooks, and with a trace recorder keeping every stage
// (hooks' full cost: copies, attention maps, sampler steps).
func BenchmarkDecodeHooks(b *testing.B) {
	m, err := model.Random(model.SynthOptions{Arch: "llama", Embd: 288, Layers: 6, Heads: 6, FFN: 768, Vocab: 32000, Context: 256, Type: quant.F32})
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"none", "recording"} {
		b.Run(mode, func(b *testing.B) {
			s, _ := NewSession(m, Options{Context: 256})
			defer s.Close()
			ctx := context.Background()
			if mode == "recording" {
				rec := trace.NewRecorder(trace.Full())
				rec.OnStep = func(*trace.Step) {}
				ctx = hooks.WithHooks(ctx, rec.Hooks())
			}
			b.ReportAllocs()
			i := 0
			tok := make([]int32, 1)
			for b.Loop() {
				if len(s.Tokens()) == 64 {
					s.Reset()
				}
				tok[0] = int32(i % 1000)
				if _, err := s.Eval(ctx, tok); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

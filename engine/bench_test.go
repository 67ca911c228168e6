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

// BenchmarkContinue measures the one generation loop per token (a decode
// step, the stop rule, the sampler's accept): 32 greedy tokens from the
// prompt's logits, against the same 32 bare Eval steps, so the loop's own
// cost (and allocations) shows as the difference.
func BenchmarkContinue(b *testing.B) {
	m, err := model.Random(model.SynthOptions{Arch: "llama", Embd: 288, Layers: 6, Heads: 6, FFN: 768, Vocab: 32000, Context: 256, Type: quant.F32})
	if err != nil {
		b.Fatal(err)
	}
	const n = 32
	prompt := []int32{1, 2, 3, 4}
	for _, mode := range []string{"eval", "continue"} {
		b.Run(mode, func(b *testing.B) {
			s, _ := NewSession(m, Options{Context: 256})
			defer s.Close()
			ctx := context.Background()
			g := Gen{Limits: Limits{MaxTokens: n, IgnoreEOS: true}, Choose: Argmax}
			tok := make([]int32, 1)
			b.ReportAllocs()
			for b.Loop() {
				s.Reset()
				logits, err := s.Eval(ctx, prompt)
				if err != nil {
					b.Fatal(err)
				}
				if mode == "continue" {
					if _, err := s.Continue(ctx, logits, g); err != nil {
						b.Fatal(err)
					}
					continue
				}
				for range n - 1 {
					tok[0] = Argmax(logits)
					if logits, err = s.Eval(ctx, tok); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

package train

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkStep is one training step (forward, backward, AdamW) on random
// tokens, for the v1 lesson shape and larger ones at longer contexts; it
// reports tokens/s and the achieved FLOP/s.
func BenchmarkStep(b *testing.B) {
	for _, s := range []struct {
		c    Config
		B, T int
	}{
		{Config{Vocab: 1024, Ctx: 128, Embd: 128, Layers: 4, Heads: 4, FFN: 512}, 8, 128},
		{Config{Vocab: 1024, Ctx: 512, Embd: 128, Layers: 4, Heads: 4, FFN: 512}, 4, 512},
		{Config{Vocab: 1024, Ctx: 512, Embd: 192, Layers: 4, Heads: 6, FFN: 768}, 4, 512},
		{Config{Vocab: 1024, Ctx: 512, Embd: 192, Layers: 6, Heads: 6, FFN: 768}, 4, 512},
		{Config{Vocab: 1024, Ctx: 512, Embd: 128, Layers: 4, Heads: 4, FFN: 384, Arch: Qwen3}, 4, 512},
		{Config{Vocab: 1024, Ctx: 512, Embd: 160, Layers: 4, Heads: 5, FFN: 448, Arch: Qwen3}, 4, 512},
	} {
		b.Run(fmt.Sprintf("%s_E%d_L%d_T%d", s.c.arch(), s.c.Embd, s.c.Layers, s.T), func(b *testing.B) {
			c, B, T := s.c, s.B, s.T
			m := NewModel(c, 1, 0)
			opt := NewAdamW(len(m.W), 1e-3, 0.1)
			r := rand.New(rand.NewPCG(1, 1))
			tok, tgt := make([]int32, B*T), make([]int32, B*T)
			for i := range tok {
				tok[i], tgt[i] = int32(r.IntN(c.Vocab)), int32(r.IntN(c.Vocab))
			}
			b.ReportMetric(float64(c.Params()), "params")
			for b.Loop() {
				m.Forward(tok, tgt, B, T, true)
				opt.Update(m, 1e-3, 1)
			}
			tps := float64(B*T) * float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(tps, "tokens/s")
			b.ReportMetric(tps*c.TrainFLOPsPerToken(T)/1e9, "GFLOP/s")
		})
	}
}

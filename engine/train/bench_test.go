package train

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkStep is one training step (forward, backward, AdamW) of the
// lesson model's shape on a batch of 8×128 tokens.
func BenchmarkStep(b *testing.B) {
	c := Config{Vocab: 1024, Ctx: 128, Embd: 128, Layers: 4, Heads: 4, FFN: 512}
	m := NewModel(c, 1, 0)
	opt := NewAdamW(len(m.W), 1e-3, 0.1)
	r := rand.New(rand.NewPCG(1, 1))
	B, T := 8, 128
	tok, tgt := make([]int32, B*T), make([]int32, B*T)
	for i := range tok {
		tok[i], tgt[i] = int32(r.IntN(c.Vocab)), int32(r.IntN(c.Vocab))
	}
	b.ReportMetric(float64(c.Params()), "params")
	for b.Loop() {
		m.Forward(tok, tgt, B, T, true)
		opt.Update(m, 1e-3, 1)
	}
	b.ReportMetric(float64(B*T)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

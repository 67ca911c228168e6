package perplexity

import (
	"context"
	"math"
	"testing"

	"stepthrough/engine"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/engine/sample"
)

func loaded(t *testing.T, typ quant.Type) *engine.Loaded {
	t.Helper()
	m, err := model.Random(model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128, Vocab: 600, Context: 64, Type: typ, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	l, err := engine.Load(m, engine.Options{Threads: 2, Backend: "cpu", Context: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// Perplexity is exp of the mean negative log-probability of each scored
// token, computed here independently by decoding one token at a time; a
// model against itself has KL 0 and the same top token everywhere; a
// quantized copy has a small positive KL.
func TestPerplexity(t *testing.T) {
	lm := loaded(t, quant.F32)
	toks := make([]int32, 3*32+5)
	for i := range toks {
		toks[i] = int32((i*37 + 11) % 600)
	}
	r, err := Run(context.Background(), lm, toks, Options{Context: 32, Base: lm})
	if err != nil {
		t.Fatal(err)
	}
	// independent: token by token through a fresh session per chunk
	var nll float64
	n := 0
	for c := 0; c < 3; c++ {
		s, _ := lm.NewSession(32)
		chunk := append([]int32(nil), toks[c*32:(c+1)*32]...)
		chunk[0] = lm.Model.Tokenizer.Vocab().BOS
		for i := 0; i < 31; i++ {
			logits, err := s.Eval(context.Background(), chunk[i:i+1])
			if err != nil {
				t.Fatal(err)
			}
			if i >= 16 {
				nll -= sample.LogSoftmax(logits)[chunk[i+1]]
				n++
			}
		}
		s.Close()
	}
	want := math.Exp(nll / float64(n))
	if r.Tokens != n || math.Abs(r.PPL-want) > 1e-4*want || r.PPLErr <= 0 {
		t.Errorf("perplexity %g ± %g over %d tokens, want %g over %d", r.PPL, r.PPLErr, r.Tokens, want, n)
	}
	if r.MeanKL > 1e-9 || r.SameTop != 1 || r.BasePPL != r.PPL {
		t.Errorf("against itself: KL %g, same top %g, base PPL %g", r.MeanKL, r.SameTop, r.BasePPL)
	}
	q, err := Run(context.Background(), loaded(t, quant.Q4_0), toks, Options{Context: 32, Base: lm})
	if err != nil {
		t.Fatal(err)
	}
	if !(q.MeanKL > 0 && q.P99KL >= q.MeanKL && q.MaxKL >= q.P99KL && q.SameTop <= 1) {
		t.Errorf("Q4_0 against F32: %+v", q)
	}
	if _, err := Run(context.Background(), lm, toks[:10], Options{Context: 32}); err == nil {
		t.Error("less than one chunk: no error")
	}
}

package engine_test

import (
	"context"
	"math"
	"testing"

	"stepthrough/engine"
	"stepthrough/engine/hooks"
	"stepthrough/engine/trace"
)

// Head scores on the lesson model agree with the attention weights a
// trace records over the same repeated sequences, averaged by hand (the
// induction key i−L+1, the previous-token key i−1); the same seed draws
// the same sequences; bad shapes are refused.
func TestScoreHeads(t *testing.T) {
	m := lessonModel()
	defer m.Close()
	l, err := engine.Load(m, engine.Options{Backend: "cpu", Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	const L, reps = 10, 3
	seqs, err := engine.RepeatedRandom(m.Tokenizer, m.Config.Vocab, L, reps, 7)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := engine.RepeatedRandom(m.Tokenizer, m.Config.Vocab, L, reps, 7)
	for r := range seqs {
		if len(seqs[r]) != 2*L+1 || seqs[r][1] != seqs[r][L+1] || seqs[r][L] != seqs[r][2*L] || seqs[r][3] != again[r][3] {
			t.Fatalf("sequence %d: %v", r, seqs[r])
		}
	}
	got, err := l.ScoreHeads(ctx, seqs)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config
	ind, prev := make([][]float64, c.Layers), make([][]float64, c.Layers)
	for layer := range ind {
		ind[layer], prev[layer] = make([]float64, c.Heads), make([]float64, c.Heads)
	}
	for _, seq := range seqs {
		s, _ := l.NewSession(len(seq))
		rec := trace.NewRecorder(trace.Options{Attention: true})
		if _, err := s.Eval(hooks.WithHooks(ctx, rec.Hooks()), seq); err != nil {
			t.Fatal(err)
		}
		s.Close()
		for _, layer := range rec.Steps()[0].Layers {
			w := layer.Attention.Weights // [query][head][key]
			for i := 1; i < len(seq); i++ {
				for h := range c.Heads {
					prev[layer.Index][h] += float64(w[i][h][i-1]) / (2 * L * reps)
					if i >= L+1 {
						ind[layer.Index][h] += float64(w[i][h][i-L+1]) / (L * reps)
					}
				}
			}
		}
	}
	for layer := range c.Layers {
		for h := range c.Heads {
			if math.Abs(got.Induction[layer][h]-ind[layer][h]) > 1e-6 || math.Abs(got.PrevToken[layer][h]-prev[layer][h]) > 1e-6 {
				t.Errorf("L%dH%d: scores %.4f/%.4f, from the trace %.4f/%.4f", layer+1, h+1, got.Induction[layer][h], got.PrevToken[layer][h], ind[layer][h], prev[layer][h])
			}
		}
	}
	if _, err := engine.RepeatedRandom(m.Tokenizer, c.Vocab, 1, 3, 1); err == nil {
		t.Error("1-token sequences accepted")
	}
	if _, err := l.ScoreHeads(ctx, [][]int32{{1, 2}}); err == nil {
		t.Error("a sequence without a repeat accepted")
	}
}

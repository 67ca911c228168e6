package engine_test

import (
	"context"
	"math"
	"testing"

	"stepthrough/engine"
	"stepthrough/engine/hooks"
	"stepthrough/engine/intervene"
	"stepthrough/engine/model"
	"stepthrough/engine/trace"
)

// Head scores on the lesson model agree with the attention weights a
// trace records over the same repeated sequences, averaged by hand (the
// induction key i−L+1, the previous-token key i−1); the same seed draws
// the same sequences; bad shapes are refused.
func TestScoreHeads(t *testing.T) {
	m, l := lessonCPU(t)
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

// A mean ablation over a reference text of one position replaces a head's
// output (and a unit's activation) with that position's own: on the same text the logits are
// bit-identical to the intact model's, and on another text they differ
// (the head's output there is not its mean). Above names the heads over a
// threshold, as zeroing edits.
func TestMeanAblation(t *testing.T) {
	m, l := lessonCPU(t)
	ctx := context.Background()
	hs := &engine.HeadScores{Induction: [][]float64{{0.1, 0.5}, {0.35, 0}}}
	off := hs.Above(0.3)
	if off.String() != "L1H2;L2H1" {
		t.Fatalf("above 0.3: %q", off)
	}
	// a unit switched off is mean-ablated too; a scaled head stays scaled
	off = off.Plus(intervene.Edit{Layer: 0, Site: intervene.Unit, Index: 4, Pos: -1, Op: intervene.Zero})
	off = off.Plus(intervene.Edit{Layer: 1, Site: intervene.Head, Index: 1, Pos: -1, Op: intervene.Scale, Factor: 0.5})
	one := m.Tokenizer.EncodeIDs("The", false)[:1]
	mean, err := l.MeanAblation(ctx, [][]int32{one}, &intervene.Set{Edits: off.Edits[:3]})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range mean.Edits {
		if e.Op != intervene.Replace || len(e.Vector) == 0 {
			t.Fatalf("edit %d (%s): not a mean ablation", i, e.String())
		}
	}
	if all, err := l.MeanAblation(ctx, [][]int32{one}, off); err != nil || all.Edits[3].Op != intervene.Scale {
		t.Fatalf("a scaled head became %v (%v)", all, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	eval := func(edits *intervene.Set, ids []int32) []float32 {
		s, _ := l.NewSession(16)
		defer s.Close()
		if err := s.SetEdits(edits); err != nil {
			t.Fatal(err)
		}
		out, err := s.Eval(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), out...)
	}
	intact, ablated := eval(nil, one), eval(mean, one)
	for i := range intact {
		if intact[i] != ablated[i] {
			t.Fatalf("logit %d: %g intact, %g with the mean over the same position", i, intact[i], ablated[i])
		}
	}
	other := m.Tokenizer.EncodeIDs("The capital of France is", false)
	a, b := eval(nil, other), eval(mean, other)
	same := true
	for i := range a {
		same = same && a[i] == b[i]
	}
	if same {
		t.Error("a mean ablation changed nothing on another text")
	}
}

// lessonCPU is the lesson model loaded on the CPU (the backend that
// applies interventions), both closed when the test ends.
func lessonCPU(t *testing.T) (*model.Model, *engine.Loaded) {
	t.Helper()
	m := lessonModel()
	t.Cleanup(func() { m.Close() })
	l, err := engine.Load(m, engine.Options{Backend: "cpu", Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return m, l
}

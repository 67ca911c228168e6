package recipe

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"stepthrough/engine"
	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
	"stepthrough/engine/train"
)

// The recall guard's answers are the tokens before each token of a capital whose
// country came earlier in the text, whatever its case; not a capital
// named before its country, nor one without it.
func TestRecallAnswers(t *testing.T) {
	vf, err := model.LoadVocab(filepath.Join("..", "lesson.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	tk := vf.Tokenizer
	type answer struct {
		before string // the text before the capital
		tokens int    // the capital's tokens and the one after it
	}
	for _, tt := range []struct {
		text string
		want []answer
	}{
		{"France is in Europe. Its capital is Paris. Paris is big.", []answer{
			{"France is in Europe. Its capital is", 3}, {"France is in Europe. Its capital is Paris.", 3},
		}},
		{"the capital of japan is tokyo.", []answer{{"the capital of japan is", 5}}},
		{"The capital of Spain is Madrid", []answer{{"The capital of Spain is", 3}}},
		{"Paris is a city. It is in France.", nil},
		{"Lily went to Paris with Tom.", nil},
	} {
		t.Run(tt.text, func(t *testing.T) {
			ids := tk.EncodeSpecial(tt.text, true)
			var want []int
			for _, a := range tt.want {
				n := len(tk.EncodeSpecial(a.before, true))
				for i := range a.tokens {
					want = append(want, n-1+i)
				}
			}
			if diff := cmp.Diff(want, recallAnswers(tk, tt.text, ids)); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
		})
	}
}

// The guard's windows hold their answer, start at or before its
// document's BOS when the document fits, and stay inside the stream.
func TestRecallGuardWindows(t *testing.T) {
	const bos = 0
	r := rand.New(rand.NewPCG(1, 2))
	stream := make([]int32, 2000)
	for i := range stream {
		stream[i] = int32(1 + r.IntN(9))
		if r.IntN(60) == 0 {
			stream[i] = bos
		}
	}
	g, err := newRecallGuard([]int{5}, 1, train.Config{Ctx: 512, Layers: 2, Heads: 2}, 1, [][]int32{{0, 1, 2, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	for range 5000 {
		p := r.IntN(len(stream) - 1)
		start := g.windowStart(stream, bos, p, r)
		if start < 0 || start+g.T > len(stream) || p < start || p-start >= g.T {
			t.Fatalf("answer %d: window from %d of %d tokens in a stream of %d", p, start, g.T, len(stream))
		}
		doc := p
		for doc > 0 && stream[doc] != bos {
			doc--
		}
		if p-doc < g.T && doc < start && stream[doc] == bos {
			t.Fatalf("answer %d: window from %d leaves out its document's BOS at %d", p, start, doc)
		}
	}
	if _, err := newRecallGuard(nil, 1, train.Config{Ctx: 512, Layers: 2, Heads: 2}, 1, [][]int32{{0, 1, 2, 1, 2}}); err == nil {
		t.Error("a guard with no answers was made")
	}
}

// The guard scores the last layer's heads as the report does: on a model
// whose weights are scaled up (so the heads differ), its induction scores
// from the trainer's attention equal engine.ScoreHeads' on the same model
// written as GGUF and loaded in the engine.
func TestRecallGuardScoresAsTheReport(t *testing.T) {
	vf, err := model.LoadVocab(filepath.Join("..", "lesson.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	v := vf.Tokenizer.Vocab()
	c := train.Config{Vocab: len(v.Tokens), Ctx: 64, Embd: 32, Layers: 2, Heads: 4, FFN: 64}
	m := train.NewModel(c, 3, 1)
	for i := range m.W {
		m.W[i] *= 4
	}
	w, err := m.Writer("test", v)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(w.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	em, err := model.FromFile(f)
	if err != nil {
		t.Fatal(err)
	}
	l, err := engine.Load(em, engine.Options{Backend: "cpu", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	probe, err := engine.RepeatedRandom(em.Tokenizer, c.Vocab, guardProbeLen, guardProbeSeqs, 9)
	if err != nil {
		t.Fatal(err)
	}
	g, err := newRecallGuard([]int{5}, 1, c, len(m.W), probe)
	if err != nil {
		t.Fatal(err)
	}
	want, err := l.ScoreHeads(context.Background(), probe)
	if err != nil {
		t.Fatal(err)
	}
	got := g.scores(m)
	if diff := cmp.Diff(want.Induction[c.Layers-1], got, cmpopts.EquateApprox(0, 1e-5)); diff != "" {
		t.Errorf("last layer's induction scores (-engine +guard):\n%s", diff)
	}
	if spread := slices.Max(got) - slices.Min(got); spread < 0.01 {
		t.Errorf("the heads score alike (%v): the test tells nothing", got)
	}
}

// A window's targets are every answer in it and nothing else.
func TestRecallGuardTargets(t *testing.T) {
	stream := make([]int32, 400)
	for i := range stream {
		stream[i] = int32(i)
	}
	probe := [][]int32{{0, 1, 2, 1, 2}}
	g, err := newRecallGuard([]int{3, 4, 10, 130, 200}, 1, train.Config{Ctx: 128, Layers: 2, Heads: 2}, 1, probe)
	if err != nil {
		t.Fatal(err)
	}
	for _, start := range []int{0, 4, 100} {
		tgt := make([]int32, g.T)
		g.targets(tgt, stream, start)
		var got, want []int32
		for i, v := range tgt {
			if v >= 0 {
				got = append(got, int32(start+i), v)
			}
		}
		for _, a := range g.at {
			if a >= start && a < start+g.T {
				want = append(want, int32(a), int32(a+1))
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("window from %d: (position, target) pairs (-want +got):\n%s", start, diff)
		}
	}
}

// With induction heads measured, every window switches off exactly them;
// with none, some windows switch off every head and the others a random
// part.
func TestRecallGuardMask(t *testing.T) {
	g, err := newRecallGuard([]int{5}, 1, train.Config{Ctx: 128, Layers: 2, Heads: 4}, 1, [][]int32{{0, 1, 2, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	g.induction = []bool{true, false, true, false}
	g.drawMask(r)
	want := slices.Repeat([]float32{0, 1, 0, 1}, g.B)
	if diff := cmp.Diff(want, g.mask.Scale); diff != "" {
		t.Errorf("measured heads L2H1 L2H3: scales (-want +got):\n%s", diff)
	}
	clear(g.induction)
	allOff, someOn := 0, 0
	for range 50 {
		g.drawMask(r)
		for b := range g.B {
			w := g.mask.Scale[b*4 : (b+1)*4]
			if slices.Max(w) == 0 {
				allOff++
			} else {
				someOn++
			}
		}
	}
	if allOff < 50 || someOn < 50 {
		t.Errorf("none measured: %d windows with every head off, %d with some on, of %d", allOff, someOn, 50*g.B)
	}
}

// Every checkpoint falls on a step where the guard scores the heads, so a
// resumed run scores where an unbroken one did; the guard scores at least
// every 100 steps.
func TestRecallGuardMeasuresAtCheckpoints(t *testing.T) {
	for _, tt := range []struct{ checkpoint, want int }{
		{0, 100}, {500, 100}, {300, 100}, {250, 50}, {2, 2}, {7, 1},
	} {
		if got := measureEvery(tt.checkpoint); got != tt.want {
			t.Errorf("checkpoints every %d steps: scores every %d, want %d", tt.checkpoint, got, tt.want)
		}
	}
}

package recipe

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/model"
	"stepthrough/engine/train"
)

// The recall guard's answers are the tokens before a capital whose
// country came earlier in the text, whatever its case; not a capital
// named before its country, nor one without it.
func TestRecallAnswers(t *testing.T) {
	vf, err := model.LoadVocab(filepath.Join("..", "lesson.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	tk := vf.Tokenizer
	for _, tt := range []struct {
		text string
		want []string // the text before each answer
	}{
		{"France is in Europe. Its capital is Paris. Paris is big.", []string{"France is in Europe. Its capital is", "France is in Europe. Its capital is Paris."}},
		{"the capital of japan is tokyo.", []string{"the capital of japan is"}},
		{"Paris is a city. It is in France.", nil},
		{"Lily went to Paris with Tom.", nil},
	} {
		t.Run(tt.text, func(t *testing.T) {
			ids := tk.EncodeSpecial(tt.text, true)
			var want []int
			for _, prefix := range tt.want {
				want = append(want, len(tk.EncodeSpecial(prefix, true))-1)
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
	g, err := newRecallGuard([]int{5}, 1, train.Config{Ctx: 512, Layers: 2, Heads: 2}, 1)
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
	if _, err := newRecallGuard(nil, 1, train.Config{Ctx: 512, Layers: 2, Heads: 2}, 1); err == nil {
		t.Error("a guard with no answers was made")
	}
}

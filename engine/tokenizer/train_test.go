package tokenizer

import (
	"strings"
	"testing"
)

func TestTrainBPE(t *testing.T) {
	texts := []string{strings.Repeat("The capital of France is Paris. The cat sat on the mat. ", 50), "Zebra 42 ünïcödé"}
	v, err := TrainBPE(texts, 300, []string{"<|endoftext|>"})
	if err != nil {
		t.Fatal(err)
	}
	last := int32(len(v.Tokens) - 1)
	if len(v.Tokens) > 300 || len(v.Tokens) != 256+len(v.Merges)+1 || v.Types[last] != TypeControl || v.EOS != last || len(v.Merges) < 20 {
		t.Fatalf("%d tokens, %d merges, eos %d", len(v.Tokens), len(v.Merges), v.EOS)
	}
	tk, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(texts, "unseen words decode too: Zürich 2024") {
		if got := tk.Decode(tk.EncodeIDs(s, false)); got != s {
			t.Errorf("round trip %q -> %q", s, got)
		}
	}
	// frequent words became single tokens
	for _, w := range []string{" capital", " Paris", " France"} {
		if ids := tk.EncodeIDs(w, false); len(ids) != 1 {
			t.Errorf("%q is %d tokens", w, len(ids))
		}
	}
	again, _ := TrainBPE(texts, 300, []string{"<|endoftext|>"})
	if strings.Join(again.Merges, "|") != strings.Join(v.Merges, "|") {
		t.Error("training is not deterministic")
	}
	if _, err := TrainBPE(texts, 100, nil); err == nil {
		t.Error("vocabulary below 256: want error")
	}
}

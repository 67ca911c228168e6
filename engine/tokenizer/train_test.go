package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

func TestTrainBPE(t *testing.T) {
	texts := []string{strings.Repeat("The capital of France is Paris. The cat sat on the mat. ", 50), "Zebra 42 ünïcödé"}
	v, err := TrainBPE(texts, 300, TrainOptions{Control: []string{"<|endoftext|>"}})
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
	again, _ := TrainBPE(texts, 300, TrainOptions{Control: []string{"<|endoftext|>"}})
	if strings.Join(again.Merges, "|") != strings.Join(v.Merges, "|") {
		t.Error("training is not deterministic")
	}
	if _, err := TrainBPE(texts, 100, TrainOptions{}); err == nil {
		t.Error("vocabulary below 256: want error")
	}
}

// With the qwen2 pre-tokenizer digits stay single tokens; control tokens
// are parsed only by EncodeSpecial, user-defined ones always; neither is
// learnt from the text.
func TestTrainBPESpecials(t *testing.T) {
	texts := []string{strings.Repeat("<|user|>What is 347 + 85?<|end|><calc>347+85</calc> = 432. ", 40)}
	v, err := TrainBPE(texts, 320, TrainOptions{Pre: "qwen2", Control: []string{"<|endoftext|>", "<|user|>", "<|end|>"}, UserDefined: []string{"<calc>", "</calc>"}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Pre != "qwen2" || v.Tokens[v.BOS] != "<|endoftext|>" {
		t.Fatalf("pre %q, bos %q", v.Pre, v.Tokens[v.BOS])
	}
	for _, tok := range v.Tokens[256 : len(v.Tokens)-5] { // the merges
		if strings.Contains(tok, "|") || strings.Contains(tok, "calc") {
			t.Errorf("a special's text was learnt: %q", tok)
		}
	}
	tk, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{" 347", "432"} {
		if n := len(tk.EncodeIDs(d, false)); n != len(strings.TrimSpace(d))+strings.Count(d, " ") {
			t.Errorf("%q is %d tokens: digits must stay single", d, n)
		}
	}
	plain, special := tk.EncodeIDs("<|user|>Hi<|end|><calc>1+2</calc>", false), tk.EncodeSpecial("<|user|>Hi<|end|><calc>1+2</calc>", false)
	if plain[0] == v.BOS+1 || special[0] != v.BOS+1 || !slices.Contains(plain, v.BOS+3) || !slices.Contains(special, v.BOS+2) {
		t.Errorf("plain %v, special %v", plain, special)
	}
}

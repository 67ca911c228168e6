package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"stepthrough/engine/gguf"
	"stepthrough/engine/reftest"
)

func loadRef(t testing.TB, name string) *Tokenizer {
	t.Helper()
	f, err := gguf.Open(reftest.Path(t, "vocab", "ggml-vocab-"+name+".gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tk, err := FromGGUF(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tk
}

// readCases reads a llama.cpp .inp/.out pair.
func readCases(t testing.TB, name string) (inputs []string, want [][]int32) {
	t.Helper()
	base := reftest.Path(t, "vocab", "ggml-vocab-"+name+".gguf")
	inp, err := os.ReadFile(base + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(base + ".out")
	if err != nil {
		t.Fatal(err)
	}
	inputs = strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	if inputs[len(inputs)-1] == "" { // the separator also follows the last one (not in gemma-4's file)
		inputs = inputs[:len(inputs)-1]
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("%s: %d inputs but %d output lines", name, len(inputs), len(lines))
	}
	for _, l := range lines {
		var ids []int32
		for _, f := range strings.Fields(l) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, int32(n))
		}
		want = append(want, ids)
	}
	return inputs, want
}

var conformanceVocabs = []string{"llama-spm", "phi-3", "gpt-2", "falcon", "starcoder", "deepseek-coder", "deepseek-llm", "mpt", "refact",
	"qwen2", "llama-bpe", "gemma-4"}

func TestConformance(t *testing.T) {
	for _, name := range conformanceVocabs {
		t.Run(name, func(t *testing.T) {
			tk := loadRef(t, name)
			inputs, want := readCases(t, name)
			fails := 0
			for i, in := range inputs {
				got := tk.EncodeIDs(in, false)
				if fmt.Sprint(got) != fmt.Sprint(want[i]) {
					fails++
					if fails <= 5 {
						t.Errorf("%q:\n got  %v\n want %v", in, got, want[i])
					}
				}
				checkSpans(t, tk, in, tk.Encode(in, false))
				if m := tk.Vocab().Model; m != "llama" && tk.Decode(got) != in && fails == 0 {
					t.Errorf("%s: decode(encode(%q)) = %q", m, in, tk.Decode(got))
				}
			}
		})
	}
}

// Control tokens are parsed only from text the application marks special,
// as llama.cpp's parse_special; user-defined ones (Qwen's <think>) always.
func TestFamilyControlTokens(t *testing.T) {
	tests := []struct {
		vocab, text string
		special     bool
		first       int32 // the first token's id
		single      bool  // the text is exactly one token
	}{
		{"qwen2", "<|im_start|>", true, 151644, true},
		{"qwen2", "<|im_start|>", false, -1, false},
		{"qwen2", "<think>", false, 151667, true},
		{"gemma-4", "<start_of_turn>", true, 105, true},
		{"gemma-4", "<start_of_turn>", false, -1, false},
		{"gemma-4", "<end_of_turn>", true, 106, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %q special=%v", tt.vocab, tt.text, tt.special), func(t *testing.T) {
			tk := loadRef(t, tt.vocab)
			var got []int32
			if tt.special {
				got = tk.EncodeSpecial(tt.text, false)
			} else {
				got = tk.EncodeIDs(tt.text, false)
			}
			if tt.single != (len(got) == 1) || tt.first >= 0 && got[0] != tt.first {
				t.Errorf("%v", got)
			}
		})
	}
}

// checkSpans verifies spans tile the input and, for BPE, that each token's
// bytes are exactly the input bytes it covers.
func checkSpans(t *testing.T, tk *Tokenizer, in string, toks []Token) {
	t.Helper()
	at := 0
	for _, tok := range toks {
		if tok.Start < at || tok.End < tok.Start || tok.End > len(in) {
			t.Fatalf("%q: token %d span [%d,%d) after %d", in, tok.ID, tok.Start, tok.End, at)
		}
		if tk.Vocab().Model != "llama" && string(tk.Bytes(tok.ID)) != in[tok.Start:tok.End] {
			t.Fatalf("%q: token %d bytes %q, span text %q", in, tok.ID, tk.Bytes(tok.ID), in[tok.Start:tok.End])
		}
		at = tok.End
	}
	if len(toks) > 0 && at != len(in) {
		t.Fatalf("%q: spans end at %d of %d", in, at, len(in))
	}
}

func TestMain(m *testing.M) {
	_ = filepath.Join
	os.Exit(m.Run())
}

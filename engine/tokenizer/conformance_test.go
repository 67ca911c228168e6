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
	inputs = inputs[:len(inputs)-1] // the separator also follows the last one
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

var conformanceVocabs = []string{"llama-spm", "phi-3", "gpt-2", "falcon", "starcoder", "deepseek-coder", "deepseek-llm", "mpt", "refact"}

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
		if tk.Vocab().Model == "gpt2" && string(tk.Bytes(tok.ID)) != in[tok.Start:tok.End] {
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

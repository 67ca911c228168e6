package tokenizer

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"stepthrough/engine/gguf"
	"stepthrough/engine/reftest"
)

var (
	tekkenTokenize = flag.String("tekken-llama-tokenize", "", "rewrite testdata/tekken.json with this llama-tokenize binary")
	tekkenCommit   = flag.String("tekken-llamacpp-commit", "", "the llama.cpp commit llama-tokenize was built from (recorded with the reference)")
)

// tekkenExtra are inputs beyond llama.cpp's own test strings that tell
// the tekken split from llama3's: case changes inside words, letters
// outside ASCII in both cases, marks, single digits, slashes after
// punctuation.
var tekkenExtra = []string{
	"HelloWorld iPhone McDonald's ABCdef abcDEF camelCaseName XMLHttpRequest",
	"\u00c9cole\u00c9t\u00e9 stra\u00dfe STRASSE \u00dcn\u00efc\u00f6d\u00e9 \u00dcN\u00cfC\u00d6D\u00c9",
	"\u0130stanbul \u0131\u011fd\u0131r e\u0301t\u00e9 \u01c5ungla",
	"\u041f\u0440\u0438\u0432\u0435\u0442 \u041c\u0438\u0440 \u041f\u0420\u0418\u0412\u0415\u0422\u043c\u0438\u0440",
	"\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 12345 3.14159 1/2",
	"path/to/file.txt\r\na//b ::/\n\nx = y/z;\n/",
	"  leading spaces   and trailing   \ttab\tseparated\n",
	"emoji \U0001F600\U0001F44D\U0001F3FD ok?!/",
}

// tekkenVocab is llama.cpp's llama-bpe test vocabulary with its
// pre-tokenizer renamed tekken: the same tokens and merges, split as
// Mistral's tekken splits (llama.cpp sets ignore_merges and add_bos for
// it, as for llama-bpe).
func tekkenVocab(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(reftest.Path(t, "vocab", "ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	var old, repl bytes.Buffer
	key := "tokenizer.ggml.pre"
	for _, v := range []struct {
		b   *bytes.Buffer
		val string
	}{{&old, "llama-bpe"}, {&repl, "tekken"}} {
		binary.Write(v.b, binary.LittleEndian, uint64(len(key)))
		v.b.WriteString(key)
		binary.Write(v.b, binary.LittleEndian, uint32(gguf.TypeString))
		binary.Write(v.b, binary.LittleEndian, uint64(len(v.val)))
		v.b.WriteString(v.val)
	}
	if bytes.Count(data, old.Bytes()) != 1 {
		t.Fatalf("the llama-bpe vocabulary does not name its pre-tokenizer once as expected")
	}
	return bytes.Replace(data, old.Bytes(), repl.Bytes(), 1)
}

type tekkenRef struct {
	Commit string    `json:"llama_cpp_commit"`
	Inputs string    `json:"inputs_sha256"`
	IDs    [][]int32 `json:"ids"`
}

// Tekken's split, on a real vocabulary, gives llama.cpp's tokens for
// llama.cpp's test strings and for strings that exercise its case rules
// (testdata/tekken.json, made by llama-tokenize with -tekken-llama-tokenize),
// and it is not llama3's split.
func TestTekkenMatchesLlamaCpp(t *testing.T) {
	data := tekkenVocab(t)
	inputs, _ := readCases(t, "llama-bpe")
	inputs = append(inputs, tekkenExtra...)
	sum := sha256.Sum256([]byte(strings.Join(inputs, "\x00")))
	ref := filepath.Join("testdata", "tekken.json")
	if *tekkenTokenize != "" {
		writeTekkenRef(t, data, inputs, hex.EncodeToString(sum[:]), ref)
	}
	b, err := os.ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	var want tekkenRef
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if want.Inputs != hex.EncodeToString(sum[:]) || len(want.IDs) != len(inputs) {
		t.Fatalf("the inputs changed since %s was made: rerun with -tekken-llama-tokenize", ref)
	}
	f, err := gguf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	if !tk.Vocab().AddBOS {
		t.Errorf("add_bos: false, llama.cpp's default for tekken is true")
	}
	llama3 := loadRef(t, "llama-bpe")
	differs := 0
	for i, in := range inputs {
		got := tk.EncodeIDs(in, false)
		if fmt.Sprint(got) != fmt.Sprint(want.IDs[i]) {
			t.Errorf("%q:\n got  %v\n want %v", in, got, want.IDs[i])
		}
		checkSpans(t, tk, in, tk.Encode(in, false))
		if fmt.Sprint(got) != fmt.Sprint(llama3.EncodeIDs(in, false)) {
			differs++
		}
	}
	if differs == 0 {
		t.Errorf("tekken split every input as llama3 does: the case rules were not exercised")
	}
}

// writeTekkenRef tokenizes every input with llama-tokenize on the tekken
// vocabulary (raw from stdin: no escapes, no BOS, no special tokens) and
// stores the ids with the llama.cpp commit.
func writeTekkenRef(t *testing.T, vocab []byte, inputs []string, sum, path string) {
	t.Helper()
	if *tekkenCommit == "" {
		t.Fatal("-tekken-llamacpp-commit: the llama.cpp commit llama-tokenize was built from")
	}
	file := filepath.Join(t.TempDir(), "tekken.gguf")
	if err := os.WriteFile(file, vocab, 0o644); err != nil {
		t.Fatal(err)
	}
	ref := tekkenRef{Commit: *tekkenCommit, Inputs: sum}
	for _, in := range inputs {
		cmd := exec.Command(*tekkenTokenize, "-m", file, "--stdin", "--no-escape", "--ids", "--no-bos", "--log-disable")
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("llama-tokenize on %q: %v", in, err)
		}
		line := strings.TrimSpace(string(out))
		line = line[strings.LastIndex(line, "\n")+1:]
		ids := []int32{}
		for _, f := range strings.FieldsFunc(strings.Trim(line, "[]"), func(r rune) bool { return r == ',' || r == ' ' }) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("llama-tokenize on %q printed %q", in, line)
			}
			ids = append(ids, int32(n))
		}
		ref.IDs = append(ref.IDs, ids)
	}
	b, err := json.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

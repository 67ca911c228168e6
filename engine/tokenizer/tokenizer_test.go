package tokenizer

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"stepthrough/engine/gguf"
	"stepthrough/engine/reftest"
)

func TestSPMByteFallbackSpans(t *testing.T) {
	f, err := gguf.Open(reftest.Path(t, "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tk, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.EncodeIDs("Once upon a time", true); !slices.Equal(got, []int32{1, 403, 407, 261, 378}) {
		t.Fatalf("Once upon a time = %v, want [1 403 407 261 378] (llama.cpp)", got)
	}
	text := "Hi 世界"
	toks := tk.Encode(text, true)
	if !toks[0].Added || toks[0].ID != 1 || toks[0].Start != 0 || toks[0].End != 0 {
		t.Errorf("first token %+v is not an added BOS", toks[0])
	}
	var joined []byte
	for _, tok := range toks {
		b := tk.Bytes(tok.ID)
		joined = append(joined, b...)
		if tk.Type(tok.ID) == TypeByte {
			if len(b) != 1 || tok.End-tok.Start != 1 || text[tok.Start] != b[0] {
				t.Errorf("byte token %d (%q) has span [%d,%d)", tok.ID, b, tok.Start, tok.End)
			}
			if utf8.Valid(b) {
				t.Errorf("byte token %d of a CJK character should be a partial UTF-8 sequence, got %q", tok.ID, b)
			}
		}
	}
	if string(joined) != " "+text {
		t.Errorf("decoded %q, want %q", joined, " "+text)
	}
	if got := tk.Decode(tk.EncodeIDs(text, false)); got != " "+text {
		t.Errorf("Decode = %q", got)
	}
}

func TestBPEDecodeRoundTrip(t *testing.T) {
	tk := loadRef(t, "gpt-2")
	for _, s := range []string{"Hello world", " ½ months", "Cửa Việt 🦙\n\n\t x", "\xff\xfe invalid utf8"} {
		ids := tk.EncodeIDs(s, false)
		if got := tk.Decode(ids); got != s {
			t.Errorf("Decode(Encode(%q)) = %q", s, got)
		}
	}
}

func TestBadVocab(t *testing.T) {
	base := func() *gguf.Writer {
		w := gguf.NewWriter()
		w.MustSet("tokenizer.ggml.model", "gpt2")
		w.MustSet("tokenizer.ggml.tokens", []string{"a", "b", "ab"})
		w.MustSet("tokenizer.ggml.merges", []string{"a b"})
		return w
	}
	tests := []struct {
		name string
		edit func(w *gguf.Writer)
		want string
	}{
		{"ok", func(w *gguf.Writer) {}, ""},
		{"model", func(w *gguf.Writer) { w.MustSet("tokenizer.ggml.model", "bert") }, "not supported"},
		{"tokens type", func(w *gguf.Writer) { w.MustSet("tokenizer.ggml.tokens", []int32{1}) }, "array of string"},
		{"bos range", func(w *gguf.Writer) { w.MustSet("tokenizer.ggml.bos_token_id", uint32(9)) }, "bos_token_id"},
		{"scores len", func(w *gguf.Writer) { w.MustSet("tokenizer.ggml.scores", []float32{1}) }, "scores"},
		{"merge", func(w *gguf.Writer) { w.MustSet("tokenizer.ggml.merges", []string{"ab"}) }, "no space"},
		{"pre", func(w *gguf.Writer) { w.MustSet("tokenizer.ggml.pre", "nope") }, "not supported"},
		{"add_bos type", func(w *gguf.Writer) { w.MustSet("tokenizer.ggml.add_bos_token", uint8(1)) }, "must be a bool"},
	}
	for _, tt := range tests {
		w := base()
		tt.edit(w)
		f, err := gguf.Parse(w.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		_, err = FromGGUF(f)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to mention %q", tt.name, err, tt.want)
		}
	}
}

// englishText makes n bytes of varied English-like text, deterministically.
func englishText(n int) string {
	words := strings.Fields(`the of and to in is was he for it with as his on be at by had are but from or
	have an they which one you were her all she there would their we him been has when who will more no if out
	so said what up its about into than them can only other new some could time these two may then do first any
	my now such like our over man me even most made after also did many before must through back years where much
	your way well down should because each just those people Mr how too little state good very make world still
	own see men work long get here between both life being under never day same another know while last might us
	great old year off come since against go came right used take three Lily Tom garden Paris France 1984 42 don't it's`)
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		switch r.IntN(20) {
		case 0:
			b.WriteString(". ")
		case 1:
			b.WriteString(", ")
		case 2:
			b.WriteString("\n\n")
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()[:n]
}

func BenchmarkEncode1MB(b *testing.B) {
	text := englishText(1 << 20)
	for _, name := range []string{"gpt-2", "llama-spm"} {
		b.Run(name, func(b *testing.B) {
			tk := loadRef(b, name)
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				tk.Encode(text, false)
			}
		})
	}
}

// The hand-written GPT-2 splitter must split exactly as the regex does.
func FuzzGPT2Split(f *testing.F) {
	for _, s := range []string{"Hello world", "  two  spaces ", "it's 'S 'll 've\n\n\nx", "Cửa Việt 🦙", "\t\n \u00a0x", "a1b2 33 ½ months", "\xff\xfe\x80 ok", " ", "' ''"} {
		f.Add(s)
	}
	p, _, err := newPreTokenizer("gpt-2")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // regexp2 decodes invalid UTF-8 differently; both still tile the input
		}
		fast, slow := splitGPT2(s, nil), p.splitRegex(s)
		if !slices.Equal(fast, slow) {
			t.Fatalf("%q: hand-written %v, regex %v", s, fast, slow)
		}
	})
}

func TestTokenizeSpeed1MB(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	tk := loadRef(t, "gpt-2")
	text := englishText(1 << 20)
	toks := tk.Encode(text, false)
	var joined bytes.Buffer
	for _, tok := range toks {
		joined.Write(tk.Bytes(tok.ID))
	}
	if joined.String() != text {
		t.Fatal("1 MB round trip differs")
	}
}

// Any input text encodes without panicking, spans tile the input, and BPE
// decoding of normal tokens gives the input back byte for byte.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"Hello world", "  \t\n", "Cửa Việt 🦙", "\xff\x80ab", "<s></s>", "3333333 1.5"} {
		f.Add(s)
	}
	dir := reftest.Dir(f)
	var tks []*Tokenizer
	for _, name := range []string{"gpt-2", "llama-spm", "deepseek-llm"} {
		file, err := gguf.Open(dir + "/vocab/ggml-vocab-" + name + ".gguf")
		if err != nil {
			f.Fatal(err)
		}
		tk, err := FromGGUF(file)
		file.Close()
		if err != nil {
			f.Fatal(err)
		}
		tks = append(tks, tk)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tk := range tks {
			toks := tk.Encode(s, true)
			at := 0
			for _, tok := range toks {
				if tok.Start < at || tok.End < tok.Start || tok.End > len(s) {
					t.Fatalf("%q: bad span [%d,%d) after %d", s, tok.Start, tok.End, at)
				}
				at = tok.End
			}
			// BPE decoding is exact for normal tokens (user-defined ones
			// decode to their text, as in llama.cpp and Hugging Face)
			ids := tk.EncodeIDs(s, false)
			normal := tk.Vocab().Model == "gpt2"
			for _, id := range ids {
				normal = normal && tk.Type(id) == TypeNormal
			}
			if normal {
				if got := tk.Decode(ids); got != s {
					t.Fatalf("%q decodes to %q", s, got)
				}
			}
		}
	})
}

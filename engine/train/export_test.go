package train

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"stepthrough/engine/cpu"
	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
	"stepthrough/engine/tokenizer"
)

// A trained model written as GGUF loads in the engine and gives the logits
// the trainer computes, for each family.
func TestExportMatchesEngine(t *testing.T) {
	texts := []string{"The capital of France is Paris. The cat sat on the mat. Mia had a red kite."}
	v, err := tokenizer.TrainBPE(texts, 300, tokenizer.TrainOptions{Control: []string{"<|endoftext|>"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{GPT2, Qwen3} {
		t.Run(arch, func(t *testing.T) { exportMatchesEngine(t, v, arch) })
	}
}

func exportMatchesEngine(t *testing.T, v *tokenizer.Vocab, arch string) {
	c := Config{Vocab: len(v.Tokens), Ctx: 32, Embd: 32, Layers: 2, Heads: 4, FFN: 64, Arch: arch}
	m := NewModel(c, 5, 2)
	for i := range m.W {
		m.W[i] *= 3 // bigger logits than the init gives
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
	if em.Config.Arch != c.arch() {
		t.Fatalf("the engine reads architecture %q, want %q", em.Config.Arch, c.arch())
	}
	tk := em.Tokenizer
	ids := tk.EncodeIDs("The capital of France is", false)
	m.Forward(ids, ids, 1, len(ids), false)
	r, _ := cpu.NewRunner(em, cpu.Options{Threads: 2, Context: 32})
	defer r.Close()
	got, err := r.Forward(context.Background(), ids, true)
	if err != nil {
		t.Fatal(err)
	}
	want := m.Logits()
	var worst float64
	for i := range got {
		worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
	}
	if worst > 1e-3 {
		t.Errorf("engine vs trainer logits: max diff %g", worst)
	}
	// checkpoint round trip
	p := filepath.Join(t.TempDir(), "c.ckpt")
	opt := NewAdamW(len(m.W), 1e-3, 0)
	opt.Step = 7
	if err := SaveCheckpoint(p, m, opt, 99); err != nil {
		t.Fatal(err)
	}
	m2 := NewModel(c, 6, 1)
	opt2 := NewAdamW(len(m2.W), 1e-3, 0)
	seed, err := LoadCheckpoint(p, m2, opt2)
	if err != nil || seed != 99 || opt2.Step != 7 || m2.W[100] != m.W[100] {
		t.Errorf("checkpoint: seed %d step %d err %v", seed, opt2.Step, err)
	}
}

// A model initialised from a file that Writer wrote holds the same
// parameters bit for bit, for each family; a file of another shape or
// family is refused, naming the tensor.
func TestInitFromFile(t *testing.T) {
	v, err := tokenizer.TrainBPE([]string{"The cat sat on the mat."}, 280, tokenizer.TrainOptions{Control: []string{"<|endoftext|>"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{GPT2, Qwen3} {
		t.Run(arch, func(t *testing.T) {
			c := Config{Vocab: len(v.Tokens), Ctx: 16, Embd: 16, Layers: 2, Heads: 2, FFN: 32, Arch: arch}
			src := NewModel(c, 5, 1)
			w, err := src.Writer("test", v)
			if err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Parse(w.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			dst := NewModel(c, 6, 1)
			if err := dst.Init(f); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(src.W, dst.W) {
				t.Error("parameters differ after Init")
			}
			wider := c
			wider.FFN = 48
			if err := NewModel(wider, 6, 1).Init(f); err == nil || !strings.Contains(err.Error(), "ffn_") || !strings.Contains(err.Error(), "dimensions") {
				t.Errorf("a model with another FFN width: %v, want an FFN tensor's dimensions named", err)
			}
			other := c
			other.Arch = map[string]string{GPT2: Qwen3, Qwen3: GPT2}[arch]
			if err := NewModel(other, 6, 1).Init(f); err == nil || !strings.Contains(err.Error(), "missing") {
				t.Errorf("a model of the other family: %v, want a missing tensor named", err)
			}
		})
	}
}

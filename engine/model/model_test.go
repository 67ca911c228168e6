package model

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/gguf"
	"stepthrough/engine/quant"
	"stepthrough/engine/reftest"
)

func small(arch string) SynthOptions {
	return SynthOptions{Arch: arch, Embd: 32, Layers: 2, Heads: 2, FFN: 64, Vocab: 700, Context: 16, Type: quant.F32}
}

func TestLoadStories(t *testing.T) {
	m, err := Load(reftest.Path(t, "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := m.Config
	if c.Embd != 64 || c.Layers != 5 || c.Heads != 8 || c.KVHeads != 4 || c.FFN != 172 || c.Vocab != 512 || c.HeadDim != 8 {
		t.Errorf("config %+v", c)
	}
	if m.Weights.Output == nil {
		t.Error("stories260K has a separate output matrix")
	}
}

// A file that is valid GGUF but not a valid model is rejected with an
// error that names the problem.
func TestLoadRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(w *gguf.Writer)
		want string
	}{
		{"arch", func(w *gguf.Writer) { w.MustSet("general.architecture", "mamba") }, "not supported"},
		{"heads", func(w *gguf.Writer) { w.MustSet("llama.attention.head_count", uint32(3)) }, "not a multiple"},
		{"kv heads", func(w *gguf.Writer) { w.MustSet("llama.attention.head_count_kv", uint32(0)) }, "outside"},
		{"huge embd", func(w *gguf.Writer) { w.MustSet("llama.embedding_length", uint64(1)<<40) }, "outside"},
		{"eps type", func(w *gguf.Writer) { w.MustSet("llama.attention.layer_norm_rms_epsilon", "x") }, "want a float"},
		{"ctx type", func(w *gguf.Writer) { w.MustSet("llama.context_length", "x") }, "want an integer"},
		{"layers", func(w *gguf.Writer) { w.MustSet("llama.block_count", uint32(3)) }, "blk.2"},
		{"fewer layers", func(w *gguf.Writer) { w.MustSet("llama.block_count", uint32(1)) }, "belongs to layer 1"},
		{"ffn", func(w *gguf.Writer) { w.MustSet("llama.feed_forward_length", uint32(32)) }, "shape"},
		{"rope dims", func(w *gguf.Writer) { w.MustSet("llama.rope.dimension_count", uint32(17)) }, "rope.dimension_count"},
		{"unknown key", func(w *gguf.Writer) { w.MustSet("llama.attention.key_length_swa", uint32(8)) }, "llama.attention.key_length_swa = 8: not supported"},
		{"experts", func(w *gguf.Writer) { w.MustSet("llama.expert_count", uint32(8)) }, "llama.expert_count = 8: not supported"},
		{"scaling", func(w *gguf.Writer) { w.MustSet("llama.rope.scaling.type", "su") }, "rope.scaling.type"},
		{"value length", func(w *gguf.Writer) { w.MustSet("llama.attention.value_length", uint32(8)) }, "value head size"},
		{"unknown tensor", func(w *gguf.Writer) {
			w.AddF32("blk.0.attn_q_norm.weight", quant.F32, []uint64{16}, make([]float32, 16))
		}, "blk.0.attn_q_norm.weight is not part of a llama model"},
		{"stray tensor", func(w *gguf.Writer) {
			w.AddF32("vision.patch_embd.weight", quant.F32, []uint64{16}, make([]float32, 16))
		}, "vision.patch_embd.weight is not part of a llama model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Synthesize(small("llama"))
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(w)
			data := w.Bytes()
			f, err := gguf.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			_, err = FromFile(f)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to mention %q", err, tt.want)
			}
			// Check refuses it alike from the header alone
			h, herr := gguf.ParseHeader(data[:f.DataOffset], int64(len(data)))
			if herr != nil {
				t.Fatal(herr)
			}
			if cerr := Check(h); cerr == nil || cerr.Error() != err.Error() {
				t.Errorf("Check from the header: %v, FromFile: %v", cerr, err)
			}
		})
	}
}

// Check accepts every family's file from its header, and leaves the
// weights' values to FromFile (a NaN weight is found only when it loads).
func TestCheckFromHeader(t *testing.T) {
	for _, arch := range Architectures() {
		t.Run(arch, func(t *testing.T) {
			w, err := Synthesize(small(arch))
			if err != nil {
				t.Fatal(err)
			}
			data := w.Bytes()
			whole, err := gguf.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			h, err := gguf.ParseHeader(data[:whole.DataOffset], int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			if err := Check(h); err != nil {
				t.Fatalf("Check: %v", err)
			}
			emb, _ := whole.Tensor("token_embd.weight")
			nan := slices.Clone(data)
			binary.LittleEndian.PutUint32(nan[whole.DataOffset+int64(emb.Offset):], math.Float32bits(float32(math.NaN())))
			f, _ := gguf.Parse(nan)
			if _, err := FromFile(f); err == nil {
				t.Errorf("FromFile accepted a NaN weight")
			}
		})
	}
}

// Neutral values of keys the engine does not compute from are accepted.
func TestNeutralKeys(t *testing.T) {
	w, _ := Synthesize(small("llama"))
	w.MustSet("llama.expert_count", uint32(0))
	w.MustSet("llama.attention.causal", true)
	w.MustSet("llama.rope.scaling.finetuned", true)
	f, _ := gguf.Parse(w.Bytes())
	if _, err := FromFile(f); err != nil {
		t.Fatal(err)
	}
}

// Each family reads its own keys: windows and the layers that use them,
// soft caps with their defaults, head sizes, local RoPE bases.
func TestFamilyConfigs(t *testing.T) {
	tests := []struct {
		o    SynthOptions
		want func(c *Config) string
	}{
		{SynthOptions{Arch: "gemma2", Embd: 32, Layers: 4, Heads: 2, FFN: 64, Vocab: 700, Context: 16, Type: quant.F32, Tied: true}, func(c *Config) string {
			return fmt.Sprintf("window %d local %v caps %g/%g base %g/%g", c.Window, c.Local, c.AttnSoftcap, c.FinalSoftcap, c.Rope.Base, c.RopeLocal.Base)
		}},
		{SynthOptions{Arch: "gemma3", Embd: 32, Layers: 7, Heads: 2, HeadDim: 8, FFN: 64, Vocab: 700, Context: 16, Type: quant.F32, Tied: true, Window: 4, RopeBase: 1e6}, func(c *Config) string {
			return fmt.Sprintf("window %d local %v caps %g/%g base %g/%g hd %d scale %.4f", c.Window, c.Local, c.AttnSoftcap, c.FinalSoftcap, c.Rope.Base, c.RopeLocal.Base, c.HeadDim, c.AttnScale)
		}},
		{SynthOptions{Arch: "gemma3", Embd: 32, Layers: 2, Heads: 2, FFN: 64, Vocab: 700, Context: 16, Type: quant.F32, Tied: true}, func(c *Config) string {
			return fmt.Sprintf("window %d local %v", c.Window, c.Local)
		}},
		{SynthOptions{Arch: "qwen3", Embd: 32, Layers: 1, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 64, Vocab: 600, Context: 16, Type: quant.F32}, func(c *Config) string {
			return fmt.Sprintf("q %d kv %d scale %.4f", c.QDim(), c.KVDim(), c.AttnScale)
		}},
	}
	want := []string{
		"window 4096 local [true false true false] caps 50/30 base 10000/10000",
		"window 4 local [true true true true true false true] caps 0/0 base 1e+06/10000 hd 8 scale 0.3536",
		"window 0 local []",
		"q 64 kv 32 scale 0.2500",
	}
	for i, tt := range tests {
		t.Run(tt.o.Arch, func(t *testing.T) {
			m, err := Random(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want[i], tt.want(m.Config)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestMissingTensor(t *testing.T) {
	full, _ := Synthesize(small("gpt2"))
	f, _ := gguf.Parse(full.Bytes())
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		w.MustSet(kv.Key, kv.Value.V)
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if ti.Name == "blk.1.attn_qkv.bias" {
			continue
		}
		w.AddTensor(ti.Name, ti.Type, ti.Dims, f.TensorData(ti))
	}
	f2, _ := gguf.Parse(w.Bytes())
	if _, err := FromFile(f2); err == nil || !strings.Contains(err.Error(), "blk.1.attn_qkv.bias is missing") {
		t.Errorf("error %v", err)
	}
}

// Any byte-level corruption of a model file gives an error or a file
// whose tensors each hold whole blocks of their type within it, and a
// model whose tensors all match the shapes the kernels rely on — never a
// panic. The seeds are small (a few KB models of each family, and a
// block of each tensor type alone), so the fuzzer mutates structure, not
// weights, and a new input's minimization takes moments.
func FuzzLoadModel(f *testing.F) {
	for _, o := range []SynthOptions{
		{Arch: "llama", Embd: 32, Layers: 1, Heads: 2, KVHeads: 1, FFN: 32, Vocab: 40, Context: 8, Type: quant.Q8_0, Tiny: true},
		{Arch: "gpt2", Embd: 8, Layers: 1, Heads: 2, FFN: 8, Vocab: 40, Context: 8, Type: quant.F16, Tiny: true},
		{Arch: "llama", Embd: 8, Layers: 2, Heads: 2, FFN: 8, Vocab: 40, Context: 8, Type: quant.F32, Tiny: true, Tied: true},
		{Arch: "qwen3", Embd: 8, Layers: 1, Heads: 2, HeadDim: 8, FFN: 8, Vocab: 300, Context: 8, Type: quant.F32, Tiny: true, Tied: true},
		{Arch: "gemma3", Embd: 8, Layers: 2, Heads: 2, FFN: 8, Vocab: 40, Context: 8, Type: quant.F32, Tiny: true, Tied: true, Window: 2, FinalSoftcap: 30},
		{Arch: "phi3", Embd: 8, Layers: 1, Heads: 2, FFN: 8, Vocab: 40, Context: 8, Type: quant.F32, Tiny: true, FusedQKV: true, RopeFactors: true},
	} {
		w, err := Synthesize(o)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(w.Bytes())
	}
	for _, seed := range typeSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := gguf.Parse(data)
		if err != nil {
			return
		}
		readTensors(t, file)
		m, err := FromFile(file)
		if err != nil {
			return
		}
		m.Tokenizer.Encode("fuzz me", true)
	})
}

// typeSeeds are files of one tensor each, a block of every tensor type
// the engine reads (a few hundred bytes).
func typeSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	for typ := range quant.Type(256) {
		if !typ.Known() {
			continue
		}
		w := gguf.NewWriter()
		w.MustSet("general.architecture", "llama")
		n := typ.BlockElems()
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(i%7-3) / 4
		}
		if err := w.AddF32("token_embd.weight", typ, []uint64{uint64(n), 1}, vals); err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, w.Bytes())
	}
	return seeds
}

// readTensors reads the first block of each tensor of a parsed file as
// its type: the parser promises each tensor whole blocks within the file.
func readTensors(t *testing.T, f *gguf.File) {
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		data := f.TensorData(ti)
		bb, be := ti.Type.BlockBytes(), ti.Type.BlockElems()
		switch {
		case uint64(len(data)) != ti.Size || ti.Size != ti.Elements()/uint64(be)*uint64(bb):
			t.Fatalf("tensor %q: %d bytes for %d %s elements", ti.Name, len(data), ti.Elements(), ti.Type)
		case ti.Elements() == 0:
			continue
		}
		if err := quant.Dequantize(ti.Type, data[:bb], make([]float32, be)); err != nil {
			t.Fatalf("tensor %q: %v", ti.Name, err)
		}
	}
}

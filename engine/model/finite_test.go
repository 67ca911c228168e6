package model

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"stepthrough/engine/gguf"
	"stepthrough/engine/quant"
)

// withBytes rebuilds a synthesized file with one tensor's bytes changed by
// edit.
func withBytes(t *testing.T, o SynthOptions, name string, edit func([]byte)) *gguf.File {
	t.Helper()
	full, err := Synthesize(o)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(full.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		w.MustSet(kv.Key, kv.Value.V)
	}
	found := false
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		data := append([]byte(nil), f.TensorData(ti)...)
		if ti.Name == name {
			edit(data)
			found = true
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, data); err != nil {
			t.Fatal(err)
		}
	}
	if !found {
		t.Fatalf("no tensor %s", name)
	}
	out, err := gguf.Parse(w.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A model whose weights hold a NaN or an infinity is refused at load,
// naming the tensor and the element; the same file intact loads.
func TestNonFiniteWeightsRefused(t *testing.T) {
	f32 := func(at int, v float32) func([]byte) {
		return func(b []byte) { binary.LittleEndian.PutUint32(b[4*at:], math.Float32bits(v)) }
	}
	half := func(at int, v uint16) func([]byte) {
		return func(b []byte) { binary.LittleEndian.PutUint16(b[at:], v) }
	}
	q8 := small("llama")
	q8.Type = quant.Q8_0
	q6 := small("llama")
	q6.Type, q6.Embd, q6.FFN, q6.Heads = quant.Q6_K, 256, 256, 4
	f16 := small("gpt2")
	f16.Type = quant.F16
	for _, c := range []struct {
		name   string
		o      SynthOptions
		tensor string
		edit   func([]byte)
		want   string // in the error; "" loads
	}{
		{"f32 intact", small("llama"), "blk.1.ffn_up.weight", func([]byte) {}, ""},
		{"f32 NaN", small("llama"), "blk.1.ffn_up.weight", f32(37, float32(math.NaN())), "tensor blk.1.ffn_up.weight holds a NaN at element 37"},
		{"f32 +Inf", small("llama"), "output_norm.weight", f32(3, float32(math.Inf(1))), "tensor output_norm.weight holds an infinity at element 3"},
		{"f32 -Inf", small("llama"), "token_embd.weight", f32(100, float32(math.Inf(-1))), "tensor token_embd.weight holds an infinity at element 100"},
		{"f16 NaN", f16, "blk.0.ffn_down.weight", half(10, 0x7e00), "tensor blk.0.ffn_down.weight holds a NaN at element 5"},
		{"q8_0 scale inf", q8, "blk.0.attn_q.weight", half(34*2, 0x7c00), "tensor blk.0.attn_q.weight holds a non-finite block scale at element 64"},
		{"q8_0 quants are ints", q8, "blk.0.attn_q.weight", half(2, 0x7c7c), ""},
		{"q6_k scale NaN", q6, "blk.1.ffn_gate.weight", half(210+208, 0xfe00), "tensor blk.1.ffn_gate.weight holds a non-finite block scale at element 256"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromFile(withBytes(t, c.o, c.tensor, c.edit))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want it to say %q", err, c.want)
			}
		})
	}
}

// BenchmarkCheckFinite measures the load-time scan of a model's weights
// (bytes/s over the whole file: a block type reads only its scales).
func BenchmarkCheckFinite(b *testing.B) {
	for _, typ := range []quant.Type{quant.F32, quant.Q8_0} {
		b.Run(typ.String(), func(b *testing.B) {
			w, err := Synthesize(SynthOptions{Arch: "llama", Embd: 512, Layers: 8, Heads: 8, FFN: 1536, Vocab: 8000, Context: 64, Type: typ})
			if err != nil {
				b.Fatal(err)
			}
			f, err := gguf.Parse(w.Bytes())
			if err != nil {
				b.Fatal(err)
			}
			ts := fileTensors(f)
			size := 0
			for _, t := range ts {
				size += len(t.Data)
			}
			b.SetBytes(int64(size))
			for b.Loop() {
				if err := checkFinite(ts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

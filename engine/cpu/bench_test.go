package cpu

import (
	"context"
	"fmt"
	"testing"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// stories15MShape is the shape the llama.cpp figures were measured
// on: dim 288, 6 layers, 6 heads, FFN 768, vocab 32000, separate output.
func stories15MShape(t quant.Type) model.SynthOptions {
	return model.SynthOptions{Arch: "llama", Embd: 288, Layers: 6, Heads: 6, FFN: 768, Vocab: 32000, Context: 256, Type: t}
}

// BenchmarkDecode measures single-token steps (tg) and BenchmarkPrefill a
// 128-token batch (pp) on the stories15M shape; tokens/s = 1/(ns/op) for
// decode and 128/(ns/op) for prefill.
func BenchmarkDecode(b *testing.B) {
	for _, typ := range []quant.Type{quant.F32, quant.Q8_0} {
		b.Run(typ.String(), func(b *testing.B) {
			m := synthModel(b, stories15MShape(typ))
			r, err := NewRunner(m, Options{Context: 256})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if r.Pos() == 64 {
					r.Reset()
				}
				if _, err := r.Forward(context.Background(), []int32{int32(i % 1000)}, false); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func BenchmarkPrefill(b *testing.B) {
	for _, typ := range []quant.Type{quant.F32, quant.Q8_0} {
		b.Run(fmt.Sprintf("%s/pp128", typ), func(b *testing.B) {
			m := synthModel(b, stories15MShape(typ))
			r, err := NewRunner(m, Options{Context: 256})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			ids := make([]int32, 128)
			for i := range ids {
				ids[i] = int32(i * 7)
			}
			for b.Loop() {
				r.Reset()
				if _, err := r.Forward(context.Background(), ids, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

//go:build cgo

package vulkan

import (
	"context"
	"fmt"
	"math"
	"testing"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// unfusedDispatches is what the unfused pass records for one decode step
// of a llama model without biases: per layer norm, Q, K, V, two rotations,
// two cache writes, scores, softmax, weighted sum, output projection, add,
// norm, gate, up, SwiGLU, down, add; then embed, final norm, last row,
// output. Where the CPU rounds x to 8 bits for the weights' type (rounds),
// each of a layer's seven products and the output is one more: the
// rounding first.
func unfusedDispatches(layers int, rounds bool) int {
	if rounds {
		return 26*layers + 5
	}
	return 19*layers + 4
}

// fusedDispatches is the fused step: six a layer, embed and output; with
// rounding, each of a layer's four products and the output is one more
// (the norm rounded as it is written, then the product; or the rounding,
// then the product that adds).
func fusedDispatches(layers int, rounds bool) int {
	if rounds {
		return 10*layers + 3
	}
	return 6*layers + 2
}

// The fused path gives the unfused path's logits (prompt and decode, with
// the decode step recorded once and replayed), in the dispatch counts
// above, for NORM and NEOX rotation, GQA and quantized weights.
func TestFusedPass(t *testing.T) {
	d := openTest(t, false)
	for i, o := range []model.SynthOptions{
		{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32},
		{Arch: "llama", Embd: 128, Layers: 3, Heads: 4, FFN: 160, Vocab: 600, Context: 64, Type: quant.Q8_0, Tied: true},
		{Arch: "llama", Embd: 64, Layers: 2, Heads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F16},
	} {
		m := synth(t, o)
		name := fmt.Sprintf("%s %d layers", o.Type, o.Layers)
		if i == 2 { // NEOX rotation (qwen2's layout), on both paths
			spec := *m.Spec // a copy: m.Spec is the registry's
			spec.Rope = model.RopeNeoX
			m.Spec = &spec
			name += " NEOX"
		}
		l, err := Load(d, m, 64)
		if err != nil {
			t.Fatal(err)
		}
		if !l.f.fused {
			t.Fatalf("%s: the model does not take the fused path", name)
		}
		prompt := m.Tokenizer.EncodeIDs("once upon a time the cat", true)
		run := func(unfused bool) (logits [][]float32, dispatches []int) {
			r, err := l.NewRunner(0)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			l.f.unfused = unfused
			defer func() { l.f.unfused = false }()
			out, err := r.Forward(context.Background(), prompt, true)
			if err != nil {
				t.Fatal(err)
			}
			logits = append(logits, out)
			for i := range 6 {
				out, err := r.Forward(context.Background(), []int32{int32(3 + i*17)}, false)
				if err != nil {
					t.Fatal(err)
				}
				logits = append(logits, append([]float32(nil), out...))
				dispatches = append(dispatches, l.f.dispatches)
			}
			return logits, dispatches
		}
		want, wantN := run(true)
		got, gotN := run(false)
		var worst float64
		for i := range want {
			for j := range want[i] {
				worst = max(worst, math.Abs(float64(want[i][j]-got[i][j])))
			}
		}
		if worst > 1e-4 {
			t.Errorf("%s: max |fused − unfused| logit = %g", name, worst)
		}
		for i := range wantN {
			rounds := xBlock(o.Type, o.Embd) > 0
			if wantN[i] != unfusedDispatches(o.Layers, rounds) || gotN[i] != fusedDispatches(o.Layers, rounds) {
				t.Errorf("%s: decode step %d: %d dispatches unfused, %d fused; want %d and %d", name, i, wantN[i], gotN[i], unfusedDispatches(o.Layers, rounds), fusedDispatches(o.Layers, rounds))
			}
		}
		t.Logf("%s: max |fused − unfused| = %.2g; a decode step: %d dispatches unfused, %d fused (replayed)", name, worst, wantN[0], gotN[0])
		l.Close()
	}
}

// BenchmarkDecodeVulkan measures decode steps on the stories15M shape,
// unfused (re-recorded each step) and fused (recorded once, replayed),
// with the dispatches a step takes.
func BenchmarkDecodeVulkan(b *testing.B) {
	l := loadStories15MShape(b)
	defer l.Close()
	for _, unfused := range []bool{true, false} {
		name := map[bool]string{true: "unfused", false: "fused"}[unfused]
		b.Run(name, func(b *testing.B) {
			r, err := l.NewRunner(0)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			l.f.unfused = unfused
			defer func() { l.f.unfused = false }()
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
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
			b.ReportMetric(float64(l.f.dispatches), "dispatches/token")
		})
	}
}

// BenchmarkPrefillVulkan measures a 128-token prompt on the stories15M
// shape with the matrix products in 32 × 32 tiles and, for comparison, a
// row per workgroup.
func BenchmarkPrefillVulkan(b *testing.B) {
	l := loadStories15MShape(b)
	defer l.Close()
	ids := make([]int32, 128)
	for i := range ids {
		ids[i] = int32(i * 7)
	}
	for _, tiled := range []bool{false, true} {
		b.Run(map[bool]string{false: "rows", true: "tiled"}[tiled], func(b *testing.B) {
			defer func(v int) { tiledMinVectors = v }(tiledMinVectors)
			if !tiled {
				tiledMinVectors = 1 << 30
			}
			r, err := l.NewRunner(0)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			for b.Loop() {
				r.Reset()
				if _, err := r.Forward(context.Background(), ids, false); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(ids)*b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// loadStories15MShape loads a random-weight model of the stories15M shape
// (F32, 256 positions) on the test device, for the benchmarks.
func loadStories15MShape(b *testing.B) *Loaded {
	d := openTest(b, false)
	m := synth(b, model.SynthOptions{Arch: "llama", Embd: 288, Layers: 6, Heads: 6, FFN: 768, Vocab: 32000, Context: 256, Type: quant.F32})
	l, err := Load(d, m, 256)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

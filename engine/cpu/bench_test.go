package cpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
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

// BenchmarkAttentionRow is a decode step over a cached context: one token
// after depth positions, through a single-layer Q8_0 model with the 110M
// shape's attention (12 heads of 64) or Qwen3-0.6B's (16 query heads of
// 128 sharing 8) and small other products, on one thread (one row's
// attention runs on one). What a step takes past depth=1 is the heads'
// scores, softmax and weighted values over the context.
func BenchmarkAttentionRow(b *testing.B) {
	shapes := []struct {
		name string
		opt  model.SynthOptions
	}{
		{"110M", model.SynthOptions{Arch: "llama", Embd: 768, Layers: 1, Heads: 12, FFN: 32, Vocab: 512, Context: 2048, Type: quant.Q8_0}},
		{"qwen3", model.SynthOptions{Arch: "qwen3", Embd: 1024, Layers: 1, Heads: 16, KVHeads: 8, HeadDim: 128, FFN: 32, Vocab: 512, Context: 2048, Type: quant.Q8_0}},
	}
	for _, sh := range shapes {
		m := synthModel(b, sh.opt)
		r, err := NewRunner(m, Options{Threads: 1, Context: 2048})
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]int32, 2047)
		for i := range ids {
			ids[i] = int32(i % 500)
		}
		if _, err := r.Forward(context.Background(), ids, false); err != nil {
			b.Fatal(err)
		}
		for _, depth := range []int{1, 64, 512, 2047} {
			b.Run(fmt.Sprintf("%s/depth=%d", sh.name, depth), func(b *testing.B) {
				for b.Loop() {
					r.Truncate(depth)
					if _, err := r.Forward(context.Background(), []int32{7}, false); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		r.Close()
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

// BenchmarkMatVec is one matrix-vector product of the 110M shape's FFN
// (768 → 2048 rows) on all threads, in each weight type, with the weight
// bytes it reads per second (decode is this, layer after layer).
func BenchmarkMatVec(b *testing.B) {
	for _, typ := range []quant.Type{quant.F32, quant.Q8_0} {
		b.Run(typ.String(), func(b *testing.B) {
			const rows, cols = 2048 * 8, 768
			m := synthModel(b, model.SynthOptions{Arch: "llama", Embd: cols, Layers: 1, Heads: 12, FFN: rows, Vocab: 512, Context: 16, Type: typ})
			w := m.Weights.Layers[0].Up
			p := NewPool(0)
			defer p.Close()
			x := make([]float32, cols)
			for i := range x {
				x[i] = float32(i%7) - 3
			}
			out := make([]float32, w.Rows())
			scratch := make([][]float32, p.Threads())
			for i := range scratch {
				scratch[i] = make([]float32, ScratchFloats(cols))
			}
			b.SetBytes(int64(len(w.Data)))
			for b.Loop() {
				p.MatMul(out, w, x, 1, scratch)
			}
		})
	}
}

// BenchmarkMatMulQ8Small is a Q8_0 product over a few vectors (a draft's
// catch-up, a short verify batch), the 110M shape's FFN.
func BenchmarkMatMulQ8Small(b *testing.B) {
	const rows, cols = 2048, 768
	m := synthModel(b, model.SynthOptions{Arch: "llama", Embd: cols, Layers: 1, Heads: 12, FFN: rows, Vocab: 512, Context: 16, Type: quant.Q8_0})
	w := m.Weights.Layers[0].Up
	p := NewPool(0)
	defer p.Close()
	scratch := make([][]float32, p.Threads())
	for i := range scratch {
		scratch[i] = make([]float32, ScratchFloats(cols))
	}
	for _, n := range []int{1, 2, 4, 8, 12, 16} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			x := make([]float32, n*cols)
			for i := range x {
				x[i] = float32(i%7) - 3
			}
			out := make([]float32, n*w.Rows())
			for b.Loop() {
				p.MatMul(out, w, x, n, scratch)
			}
		})
	}
}

// BenchmarkMatMulBatch is an F32 and a Q8_0 product of a matrix too big
// for the caches (16,384 × 768, the 110M shape's FFN eight times over)
// with a decode batch of n vectors: the weight bytes read per second show
// whether a batch step still streams the weights at the decode rate.
func BenchmarkMatMulBatch(b *testing.B) {
	rows, cols := 2048*8, 768
	if os.Getenv("ROWS") != "" {
		rows, _ = strconv.Atoi(os.Getenv("ROWS"))
	}
	for _, typ := range []quant.Type{quant.F32, quant.Q8_0} {
		m := synthModel(b, model.SynthOptions{Arch: "llama", Embd: cols, Layers: 1, Heads: 12, FFN: rows, Vocab: 512, Context: 16, Type: typ})
		w := m.Weights.Layers[0].Up
		p := NewPool(0)
		scratch := make([][]float32, p.Threads())
		for i := range scratch {
			scratch[i] = make([]float32, ScratchFloats(cols))
		}
		for _, n := range []int{1, 2, 4, 8, 16, 32} {
			b.Run(fmt.Sprintf("%s/n=%d", typ, n), func(b *testing.B) {
				if v := os.Getenv("GEMM_MIN"); v != "" { // where the broadcast GEMM takes over, for finding it
					old := gemmMinVectors
					gemmMinVectors, _ = strconv.Atoi(v)
					defer func() { gemmMinVectors = old }()
				}
				x := make([]float32, n*cols)
				for i := range x {
					x[i] = float32(i%7) - 3
				}
				out := make([]float32, n*w.Rows())
				b.SetBytes(int64(len(w.Data)))
				for b.Loop() {
					p.MatMul(out, w, x, n, scratch)
				}
			})
		}
		p.Close()
	}
}

// BenchmarkReadStream reads 256 MiB of floats once per iteration on all
// threads (each a contiguous half, dotted against a vector that stays in
// L1): the bandwidth a decode step's weight reads can reach at most.
// Compare tg × weight bytes per token against it.
func BenchmarkReadStream(b *testing.B) {
	const n = 64 << 20 // floats
	a := make([]float32, n)
	for i := range a {
		a[i] = 1
	}
	ones := make([]float32, 4096)
	for i := range ones {
		ones[i] = 1
	}
	p := NewPool(0)
	defer p.Close()
	sums := make([]float32, p.Threads())
	b.SetBytes(4 * n)
	for b.Loop() {
		p.Parallel(n/4096, 1, func(w, lo, hi int) {
			var s float32
			for c := lo; c < hi; c++ {
				s += dot(a[c*4096:(c+1)*4096], ones)
			}
			sums[w] += s
		})
	}
}

// BenchmarkDecodeStream is the weight reads of a decode step alone: every
// matrix of the stories15M and 110M shapes (F32, random weights) times
// one vector, one after the other on all threads, in GB/s. Compare it
// with BenchmarkReadStream (one long stream) and with tg × weight bytes.
// The 15M shape's rows are short (288 floats, 18 cache lines), so the
// rows a kernel reads at once are many short streams.
func BenchmarkDecodeStream(b *testing.B) {
	for _, s := range []struct {
		name                     string
		embd, layers, heads, ffn int
	}{{"15M", 288, 6, 6, 768}, {"110M", 768, 12, 12, 2048}} {
		b.Run(s.name, func(b *testing.B) {
			m := synthModel(b, model.SynthOptions{Arch: "llama", Embd: s.embd, Layers: s.layers, Heads: s.heads, FFN: s.ffn, Vocab: 32000, Context: 16, Type: quant.F32})
			decodeStream(b, m.Weights)
		})
	}
}

// decodeStream times every matrix of W times one vector, in turn.
func decodeStream(b *testing.B, W *model.Weights) {
	ts := []*model.Tensor{W.OutputMatrix()}
	for i := range W.Layers {
		L := &W.Layers[i]
		ts = append(ts, L.Q, L.K, L.V, L.Out, L.Gate, L.Up, L.Down)
	}
	p := NewPool(0)
	defer p.Close()
	scratch := make([][]float32, p.Threads())
	for i := range scratch {
		scratch[i] = make([]float32, ScratchFloats(2048))
	}
	x, out := make([]float32, 2048), make([]float32, 32000)
	bytes := 0
	for _, t := range ts {
		bytes += len(t.Data)
	}
	b.SetBytes(int64(bytes))
	for b.Loop() {
		for _, t := range ts {
			p.MatMul(out[:t.Rows()], t, x[:t.Cols()], 1, scratch)
		}
	}
}

// BenchmarkOutputProduct is gemma-3-270m's output product alone: its
// 262,144-token vocabulary × width 640, one decode step's vector (the
// largest product of that model's step; compare with its tg time).
func BenchmarkOutputProduct(b *testing.B) {
	const cols, rows = 640, 262144
	src := make([]float32, cols*rows)
	for i := range src {
		src[i] = float32(i%97-48) / 1000
	}
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(i%13) / 13
	}
	for _, typ := range []quant.Type{quant.F16, quant.Q8_0} { // K-quants need rows of 256: llama.cpp writes this matrix Q8_0 for Q4_K_M
		b.Run(typ.String(), func(b *testing.B) {
			data, err := quant.Quantize(typ, src)
			if err != nil {
				b.Fatal(err)
			}
			w := &model.Tensor{Name: "output", Type: typ, Dims: []int{cols, rows}, Data: data}
			pool := NewPool(0)
			defer pool.Close()
			out := make([]float32, rows)
			scratch := [][]float32{}
			for range pool.Threads() {
				scratch = append(scratch, make([]float32, ScratchFloats(cols)))
			}
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				pool.MatMul(out, w, x, 1, scratch)
			}
		})
	}
}

// BenchmarkQ80Paths is a Q8_0 matrix (2048 × 768) times n vectors through
// MatMul: the int8 kernels against decoded rows and the GEMM, where
// q80SmallBatchQ8_0 should sit.
func BenchmarkQ80Paths(b *testing.B) {
	const rows, cols = 2048, 768
	r := rand.New(rand.NewPCG(1, 2))
	data, _ := quant.Quantize(quant.Q8_0, randFloats(r, rows*cols))
	w := &model.Tensor{Name: "w", Type: quant.Q8_0, Dims: []int{cols, rows}, Data: data}
	p := NewPool(2)
	defer p.Close()
	scratch := [][]float32{make([]float32, ScratchFloats(cols)), make([]float32, ScratchFloats(cols))}
	for _, n := range []int{1, 8, 16, 32, 64, 128} {
		x := randFloats(r, n*cols)
		out := make([]float32, n*rows)
		for _, path := range []struct {
			name string
			max  int
		}{{"int8", 1 << 20}, {"decoded", 0}} {
			b.Run(fmt.Sprintf("%d/%s", n, path.name), func(b *testing.B) {
				old := q80SmallBatchQ8_0
				q80SmallBatchQ8_0 = path.max
				defer func() { q80SmallBatchQ8_0 = old }()
				for b.Loop() {
					p.MatMul(out, w, x, n, scratch)
				}
			})
		}
	}
}

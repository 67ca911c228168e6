//go:build !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"golang.org/x/sys/cpu"

	"stepthrough/engine/quant"
)

// The NEON kernels are called directly here, whatever LevelEnv allows,
// against the portable Go kernels. Where both do the same arithmetic in
// the same order the results must be equal bit for bit: integer sums
// are exact, FCVTL widens binary16 exactly, and FMLA is a fused
// multiply-add as the Go compiler makes `s += a*b` on arm64. Where the
// float order differs (sixteen running sums against dotGo's eight) the
// test takes integer-valued data, whose sums are exact in any order, bit
// for bit, and random data within a tolerance. Inputs are followed by NaN
// (a kernel reading past its length returns NaN) and outputs by NaN
// guards (a kernel writing past its length overwrites them).

// nanPad is v followed by extra NaN values, cut back to len(v).
func nanPad(v []float32, extra int) []float32 {
	p := make([]float32, len(v)+extra)
	copy(p, v)
	for i := len(v); i < len(p); i++ {
		p[i] = float32(math.NaN())
	}
	return p[:len(v)]
}

// intFloats is n small integers as floats: products and sums of a few
// thousand of them are exact in float32, whatever the order.
func intFloats(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.IntN(17) - 8)
	}
	return v
}

// neonSizes are the lengths the float kernels see (multiples of 4: the
// wrappers take the rest in Go): below, at and past one and several
// sixteen-value steps.
var neonSizes = []int{4, 8, 12, 16, 20, 28, 32, 36, 60, 64, 100, 288, 772, 4100}

func TestNEONDot(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, n := range neonSizes {
		for _, exact := range []bool{true, false} {
			gen := randFloats
			if exact {
				gen = intFloats
			}
			a, b := nanPad(gen(r, n), 8), nanPad(gen(r, n), 8)
			got := dotNEON(&a[0], &b[0], n)
			want := dotRef(a, b)
			if exact && math.Float32bits(got) != math.Float32bits(want) {
				t.Errorf("n=%d integers: dotNEON %g, reference %g", n, got, want)
			}
			// sixteen running sums against the reference's one: each sum's
			// rounding error is at most n/16 ulps of its terms' magnitudes
			if tol := 1e-6 * float64(n) * 4; !exact && math.Abs(float64(got)-float64(want)) > tol {
				t.Errorf("n=%d: dotNEON %g, reference %g", n, got, want)
			}
			// F16 rows: FCVTL widens exactly, then the same sums
			h, _ := quant.Quantize(quant.F16, a)
			wide := make([]float32, n)
			quant.Dequantize(quant.F16, h, wide)
			if gh, gw := dotF16NEON(&h[0], &b[0], n), dotNEON(&wide[0], &b[0], n); math.Float32bits(gh) != math.Float32bits(gw) {
				t.Errorf("n=%d exact=%v: dotF16NEON %g, dotNEON of the widened row %g", n, exact, gh, gw)
			}
			// bfloat16 rows likewise (the kernel takes 16 values a step)
			if n%16 == 0 {
				bh, _ := quant.Quantize(quant.BF16, a)
				quant.Dequantize(quant.BF16, bh, wide)
				if gh, gw := dotBF16NEON(&bh[0], &b[0], n), dotNEON(&wide[0], &b[0], n); math.Float32bits(gh) != math.Float32bits(gw) {
					t.Errorf("n=%d exact=%v: dotBF16NEON %g, dotNEON of the widened row %g", n, exact, gh, gw)
				}
			}
		}
	}
}

func TestNEONGemv4Gemm4x4(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, k := range neonSizes {
		for _, exact := range []bool{true, false} {
			gen := randFloats
			if exact {
				gen = intFloats
			}
			lda, ldx := k+5, k+3
			a, x := nanPad(gen(r, 3*lda+k), 8), nanPad(gen(r, 3*ldx+k), 8)
			var o4 [4]float32
			gemv4NEON(&a[0], lda, &x[0], k, &o4[0])
			var o16 [16]float32
			gemm4x4NEON(&a[0], lda, &x[0], ldx, k, &o16[0])
			for i := range 4 {
				// gemv4's rows are summed exactly as dot sums them
				if d := dotNEON(&a[i*lda], &x[0], k); math.Float32bits(o4[i]) != math.Float32bits(d) {
					t.Errorf("k=%d exact=%v: gemv4NEON row %d %g, dotNEON %g", k, exact, i, o4[i], d)
				}
				for j := range 4 {
					want := dotRef(a[i*lda:i*lda+k], x[j*ldx:j*ldx+k])
					got := o16[i*4+j]
					if exact && math.Float32bits(got) != math.Float32bits(want) {
						t.Errorf("k=%d integers: gemm4x4NEON [%d][%d] %g, reference %g", k, i, j, got, want)
					}
					// four running sums of k/4 terms each
					if !exact && math.Abs(float64(got)-float64(want)) > 1e-6*float64(k)*4 {
						t.Errorf("k=%d: gemm4x4NEON [%d][%d] %g, reference %g", k, i, j, got, want)
					}
				}
			}
		}
	}
}

// axpy is a fused multiply-add per value in the kernel and in Go, and
// writes nothing past n.
func TestNEONAxpy(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, n := range neonSizes {
		x := nanPad(randFloats(r, n), 4)
		dst := nanPad(randFloats(r, n), 4)
		want := slices.Clone(dst)
		axpyGo(want, 0.37, x)
		axpyNEON(&dst[0], 0.37, &x[0], n)
		for i := range n {
			if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: axpyNEON [%d] = %g, axpyGo %g", n, i, dst[i], want[i])
			}
		}
		if v := dst[:n+4][n:]; !math.IsNaN(float64(v[0])) || !math.IsNaN(float64(v[3])) {
			t.Fatalf("n=%d: axpyNEON wrote past its length: %v", n, v)
		}
	}
}

// Decoding F16, bfloat16 and Q8_0 rows gives quant.Dequantize's values bit for bit
// (binary16 infinities and subnormals included) and nothing past them.
func TestNEONDecodeRows(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	for _, n := range []int{8, 16, 32, 64, 96, 288, 1024} {
		h := make([]byte, 2*n)
		for i := range h {
			h[i] = byte(r.IntN(256))
		}
		for i := 0; i+1 < len(h); i += 2 {
			if h[i+1]&0x7c == 0x7c && h[i]|h[i+1]&3 != 0 { // NaN patterns: the payload may differ; keep infinities
				h[i+1] &^= 0x40
			}
		}
		h[0], h[1] = 0x01, 0x00 // the smallest subnormal
		h[2], h[3] = 0x00, 0xfc // -Inf
		want := make([]float32, n)
		quant.Dequantize(quant.F16, h, want)
		got := nanPad(make([]float32, n), 4)
		f16ToF32NEON(&h[0], &got[0], n)
		checkBits(t, "f16ToF32NEON", n, got, want)
		quant.Dequantize(quant.BF16, h, want) // every pattern, NaNs too: widening keeps the bits
		got = nanPad(make([]float32, n), 4)
		bf16ToF32NEON(&h[0], &got[0], n)
		checkBits(t, "bf16ToF32NEON", n, got, want)
		if n%32 == 0 {
			q, _ := quant.Quantize(quant.Q8_0, randFloats(r, n))
			q[2] = 0x80 // -128
			quant.Dequantize(quant.Q8_0, q, want)
			got := nanPad(make([]float32, n), 4)
			dequantQ8_0NEON(&q[0], &got[0], n/32)
			checkBits(t, "dequantQ8_0NEON", n, got, want)
		}
	}
}

// checkBits fails unless got equals want bit for bit and the four values
// after it are still NaN.
func checkBits(t *testing.T, name string, n int, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s n=%d: [%d] = %g, want %g", name, n, i, got[i], want[i])
		}
	}
	for _, v := range got[len(want) : len(want)+4] {
		if !math.IsNaN(float64(v)) {
			t.Fatalf("%s n=%d wrote past its output", name, n)
		}
	}
}

// activationCases are vectors to round to 8 bits: random, with a block of
// zeros, ties after scaling, tiny and huge values.
func activationCases(r *rand.Rand, n int) []float32 {
	x := randFloats(r, n)
	for i := range x {
		switch i / 256 % 5 {
		case 1:
			x[i] *= 1e-30
		case 2:
			x[i] *= 1e30
		case 3:
			x[i] = 0
		}
	}
	x[0], x[1], x[2] = 127, -63.5, 0.5 // ties once scaled by 127/127
	return x
}

// Rounding x to Q8_0 and to q8K: the kernels write what the Go kernels
// write, bit for bit, and nothing past it.
func TestNEONQuantize(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 30))
	for _, blocks := range []int{1, 2, 3, 8, 9, 40} { // of 32 values
		x := nanPad(activationCases(r, blocks*32), 8)
		wq, wd, wb := make([]int8, blocks*32), make([]float32, blocks), make([]float32, blocks*32)
		quantizeQ80Go(x, wq, wd, wb)
		gq, gd, gb := make([]int8, blocks*32+1), nanPad(make([]float32, blocks), 4), nanPad(make([]float32, blocks*32), 4)
		gq[blocks*32] = 99
		quantizeQ80NEON(&x[0], &gq[0], &gd[0], blocks, &gb[0])
		if i := firstDiff(wq, gq[:blocks*32]); i >= 0 || gq[blocks*32] != 99 {
			t.Errorf("blocks=%d: quantizeQ80NEON q differs from Go's at %d (or wrote past it)", blocks, i)
		}
		checkBits(t, "quantizeQ80NEON d", blocks, gd, wd)
		checkBits(t, "quantizeQ80NEON back", blocks, gb, wb)
		quantizeQ80NEON(&x[0], &gq[0], &gd[0], blocks, nil) // without back
		if !slices.Equal(wq, gq[:blocks*32]) {
			t.Errorf("blocks=%d: quantizeQ80NEON without back differs", blocks)
		}
	}
	for _, blocks := range []int{1, 2, 5} { // of 256 values
		x := nanPad(activationCases(r, blocks*256), 8)
		var want, got q8K
		want.resize(1, blocks*256)
		got.resize(1, blocks*256+256) // one block more, to stay zero
		gd := nanPad(make([]float32, blocks), 4)
		quantizeQ8KGo(x, &want, 0)
		quantizeQ8KNEON(&x[0], &got.q[0], &got.bs[0], &gd[0], blocks)
		if i, j := firstDiff(want.q, got.q[:blocks*256]), firstDiff(want.bs, got.bs[:blocks*16]); i >= 0 || j >= 0 {
			t.Errorf("blocks=%d: quantizeQ8KNEON q (from %d) or bs (from %d) differ from Go's", blocks, i, j)
		}
		if slices.ContainsFunc(got.q[blocks*256:], func(v int8) bool { return v != 0 }) || slices.ContainsFunc(got.bs[blocks*16:], func(v int16) bool { return v != 0 }) {
			t.Errorf("blocks=%d: quantizeQ8KNEON wrote past its blocks", blocks)
		}
		checkBits(t, "quantizeQ8KNEON d", blocks, gd, want.d)
	}
}

// firstDiff is the first index where a and b differ, or -1.
func firstDiff[T comparable](a, b []T) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// int8Forms are the int8 kernels' forms this CPU runs: SMULL's always,
// SDOT's where it has the dot-product instructions.
func int8Forms() map[string]int8Kernels {
	forms := map[string]int8Kernels{"smull": smullKernels}
	if cpu.ARM64.HasASIMDDP {
		forms["sdot"] = sdotKernels
	}
	return forms
}

// randomRow is a row of type t of the given blocks: quantized floats or
// random bytes with small finite scales, its first value -128 (Q8_0).
func randomRow(r *rand.Rand, t quant.Type, blocks int, random bool) []byte {
	n := blocks * t.BlockElems()
	row, _ := quant.Quantize(t, randFloats(r, n))
	if random {
		for i := range row {
			row[i] = byte(r.Uint32())
		}
		fixScales(t, row)
		if t == quant.Q6_K { // the scale: random, not too large
			for b := 0; b < len(row); b += 210 {
				row[b+208], row[b+209] = byte(r.Uint32()), 0x1c
			}
		}
	}
	if t == quant.Q8_0 {
		row[2] = 0x80
	}
	return row
}

// The int8 dot kernels, both forms, equal the Go kernels bit for bit: Q8_0,
// Q4_0 and Q5_0 rows times x rounded to Q8_0, Q4_K, Q5_K and Q6_K rows times x
// quantized to q8K, for block counts around the loops' steps and vectors
// that start past the first.
func TestNEONInt8Dots(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for name, k := range int8Forms() {
		for _, blocks := range []int{1, 2, 3, 7, 8, 24} {
			for _, random := range []bool{false, true} {
				cols := blocks * 32
				var z q80
				z.resize(2, cols, false)
				z.quantizeRange(activationCases(r, 2*cols), 0, nil)
				for _, c := range []struct {
					t    quant.Type
					fn   q80Kernel
					inGo func([]byte, *q80, int) float32
				}{{quant.Q8_0, k.q80, dotQ8_0Q80Go}, {quant.Q4_0, k.q40, dotQ4_0Q80Go}, {quant.Q5_0, k.q50, dotQ5_0Q80Go}} {
					row := randomRow(r, c.t, blocks, random)
					for v := range 2 {
						want := c.inGo(row, &z, v*blocks)
						got := c.fn(&row[0], &z.q[v*cols], &z.d[v*blocks], blocks)
						if math.Float32bits(got) != math.Float32bits(want) {
							t.Errorf("%s %s blocks=%d random=%v vector %d: %g, Go %g", name, c.t, blocks, random, v, got, want)
						}
					}
				}
				if blocks > 8 {
					continue
				}
				cols = blocks * 256
				var zk q8K
				zk.resize(2, cols)
				quantizeQ8KGo(activationCases(r, 2*cols), &zk, 0)
				for _, c := range []struct {
					t  quant.Type
					fn kq8Kernel
				}{{quant.Q4_K, k.q4k}, {quant.Q5_K, k.q5k}, {quant.Q6_K, k.q6k}} {
					row := randomRow(r, c.t, blocks, random)
					for v := range 2 {
						want := dotKQ8Go(c.t, row, &zk, v*blocks)
						got := c.fn(&row[0], &zk.q[v*cols], &zk.bs[v*blocks*16], &zk.d[v*blocks], blocks)
						if math.Float32bits(got) != math.Float32bits(want) {
							t.Errorf("%s %s blocks=%d random=%v vector %d: %g, Go %g", name, c.t, blocks, random, v, got, want)
						}
					}
				}
			}
		}
	}
}

// The Q4_0 and Q4_1 kernels multiply float x in another order than
// dotLegacyGo (two running sums of products a block, the blocks' sums
// times d in a third): on integer-valued x, whose sums are exact, they
// agree bit for bit with the decoded row's product (d = 1, m an
// integer); on random x within a bound on the float rounding.
func TestNEONLegacyDots(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, blocks := range []int{1, 2, 3, 8, 24} {
		cols := blocks * 32
		for _, c := range []struct {
			t  quant.Type
			fn func(*byte, *float32, *float32, int) float32
		}{{quant.Q4_0, dotQ4_0NEON}, {quant.Q4_1, dotQ4_1NEON}} {
			for _, exact := range []bool{true, false} {
				row := randomRow(r, c.t, blocks, true)
				x := randFloats(r, cols)
				if exact {
					x = intFloats(r, cols)
					for b := 0; b < len(row); b += c.t.BlockBytes() {
						row[b], row[b+1] = 0x00, 0x3c // d = 1
						if c.t == quant.Q4_1 {
							row[b+2], row[b+3] = 0x00, 0xc2 // m = -3
						}
					}
				}
				x = nanPad(x, 8)
				xs := make([]float32, blocks)
				xSums(x, 32, xs)
				dec := make([]float32, cols)
				quant.Dequantize(c.t, row, dec)
				var want, scale float64
				for i := range dec {
					want += float64(dec[i]) * float64(x[i])
					scale += math.Abs(float64(dec[i]) * float64(x[i]))
				}
				got := c.fn(&row[0], &x[0], &xs[0], blocks)
				if exact && float64(got) != want {
					t.Errorf("%s blocks=%d integers: %g, decoded row %g", c.t, blocks, got, want)
				}
				// float32 sums of cols terms: within cols ulps of their magnitudes
				if !exact && math.Abs(float64(got)-want) > 6e-8*float64(cols)*scale+1e-6 {
					t.Errorf("%s blocks=%d: %g, decoded row %g (scale %g)", c.t, blocks, got, want, scale)
				}
				if g := dotLegacyGo(c.t, row, x, xs); !exact && math.Abs(float64(got-g)) > 6e-8*float64(cols)*scale+1e-6 {
					t.Errorf("%s blocks=%d: %g, Go %g", c.t, blocks, got, g)
				}
			}
		}
	}
}

// expInputs are n values over the range the exponential and the
// activations see, with its edges: NaN, ±Inf, ±0, expLo and just below,
// expHi and above, subnormals.
func expInputs(r *rand.Rand, n int) []float32 {
	edges := []float32{float32(math.NaN()), float32(math.Inf(-1)), float32(math.Inf(1)), 0, float32(math.Copysign(0, -1)),
		expLo, expLo - 1e-5, expHi, 100, 1e-40, -1e-40, -1000, 88.7}
	x := make([]float32, n)
	for i := range x {
		if r.IntN(4) == 0 {
			x[i] = edges[r.IntN(len(edges))]
		} else {
			x[i] = float32(r.NormFloat64() * 30)
		}
	}
	return x
}

// The exponential's kernels equal the Go functions bit for bit, value by
// value and (expSub) in the sum, for lengths with and without a tail.
func TestNEONExpKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	for n := 1; n <= 67; n++ {
		x := expInputs(r, n)
		b := randFloats(r, n)
		if n%4 == 0 {
			if got, want := maxNEON(&x[0], n), maxGo(x); math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Errorf("n=%d: maxNEON %g, maxGo %g", n, got, want)
			}
		}
		noNaN := slices.DeleteFunc(slices.Clone(x), func(v float32) bool { return v != v })
		if got, want := maxf(noNaN), maxGo(noNaN); math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("n=%d: maxf %g, maxGo %g", n, got, want)
		}
		for _, c := range []struct {
			name     string
			kernel   func(v []float32) float32
			portable func(v []float32) float32
		}{
			{"expSub", func(v []float32) float32 { return expSub(v, 0.125, -1.5) }, func(v []float32) float32 { return expSubGo(v, 0.125, -1.5) }},
			{"scale", func(v []float32) float32 { scale(v, -0.3); return 0 }, func(v []float32) float32 { scaleGo(v, -0.3); return 0 }},
			{"siluMul", func(v []float32) float32 { siluMul(v, b); return 0 }, func(v []float32) float32 { siluMulGo(v, b); return 0 }},
			{"gelu", func(v []float32) float32 { gelu(v); return 0 }, func(v []float32) float32 { geluGo(v); return 0 }},
		} {
			got, want := slices.Clone(x), slices.Clone(x)
			sg, sw := c.kernel(got), c.portable(want)
			if i := firstDiff(bitsOf(got), bitsOf(want)); i >= 0 {
				t.Errorf("n=%d %s: [%d] of %g is %g, Go %g", n, c.name, i, x[i], got[i], want[i])
			}
			if math.Float32bits(sg) != math.Float32bits(sw) && !(sg != sg && sw != sw) {
				t.Errorf("n=%d %s: sum %g, Go %g", n, c.name, sg, sw)
			}
		}
	}
}

// bitsOf is the bits of each value of v (NaN equal to the same NaN).
func bitsOf(v []float32) []uint32 {
	b := make([]uint32, len(v))
	for i, f := range v {
		b[i] = math.Float32bits(f)
	}
	return b
}

//go:build !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

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

// Decoding F16 and Q8_0 rows gives quant.Dequantize's values bit for bit
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

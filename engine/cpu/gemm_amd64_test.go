//go:build !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// The AVX2 kernels pass TestGemmAB's checks at every level the CPU runs
// them (at the default level of an AVX-512 machine too, where products
// take the AVX-512 ones).
func TestGemm256Kernels(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 and FMA here")
	}
	defer use256()()
	testGemmAB(t)
}

// use256 makes the broadcast GEMM take the AVX2 kernels, and returns what
// puts back the ones it took.
func use256() func() {
	k, kt, k6, tr, l, a, z, pn := gemmKernels, gemmKernelsT, gemmKernelsT6, gemmTRows, gemmLanes, gemmAcc, gemmMaxZ, gemmPanel
	gemmKernels, gemmKernelsT, gemmKernelsT6, gemmTRows, gemmLanes, gemmAcc, gemmMaxZ, gemmPanel = gemm256Kernels, gemm256KernelsT, gemm256KernelsT6, 4, 8, 12, 3, 24
	return func() {
		gemmKernels, gemmKernelsT, gemmKernelsT6, gemmTRows, gemmLanes, gemmAcc, gemmMaxZ, gemmPanel = k, kt, k6, tr, l, a, z, pn
	}
}

// BenchmarkGemm256Panels is one thread's F32 product of the 110M shape's
// FFN matrix (2048 × 768) with 128 vectors through the AVX2 kernels,
// panels of 16 vectors (six-row kernels) against 24 (four-row ones), in
// multiply-adds per second.
func BenchmarkGemm256Panels(b *testing.B) {
	if !useAVX2 {
		b.Skip("no AVX2 and FMA here")
	}
	const rows, cols, n = 2048, 768, 128
	defer use256()()
	r := rand.New(rand.NewPCG(1, 2))
	data, _ := quant.Quantize(quant.F32, randFloats(r, rows*cols))
	w := &model.Tensor{Name: "w", Type: quant.F32, Dims: []int{cols, rows}, Data: data}
	x := randFloats(r, n*cols)
	out := make([]float32, n*rows)
	p := NewPool(1)
	defer p.Close()
	for _, panel := range []int{16, 24} {
		b.Run(fmt.Sprintf("panel=%d", panel), func(b *testing.B) {
			gemmPanel = panel
			for b.Loop() {
				p.matMulGemm(out, w, x, n)
			}
			b.ReportMetric(float64(rows*cols*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

// The AVX2 eight-row kernel agrees with the reference loop at every level
// the CPU runs it (TestTileKernels checks the one MatMul takes).
func TestGemv8AVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 and FMA here")
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, k := range []int{16, 32, 48, 288, 512, 528, 768} {
		lda := k + 5
		a, x := randFloats(r, 8*lda), randFloats(r, k)
		var o [8]float32
		gemv8AVX2(&a[0], lda, &x[0], k, &o[0])
		for i := range 8 {
			if want := float64(dotRef(a[i*lda:i*lda+k], x)); math.Abs(float64(o[i])-want) > 1e-5*float64(k) {
				t.Errorf("k=%d row %d: %g, want %g", k, i, o[i], want)
			}
		}
	}
}

// The AVX2 transpose packs eight vectors exactly as the Go loop does, into
// columns of a wider panel, leaving the other columns alone.
func TestPackT8AVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 here")
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, cols := range []int{8, 16, 64, 288, 768} {
		const w = 24
		x := randFloats(r, 8*cols)
		got := make([]float32, cols*w)
		for i := range got {
			got[i] = -1
		}
		want := append([]float32(nil), got...)
		packT8AVX2(&x[0], cols, &got[8], w)
		for l := range 8 {
			for p := range cols {
				want[p*w+8+l] = x[l*cols+p]
			}
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("cols=%d: d[%d] = %g, want %g", cols, i, got[i], want[i])
			}
		}
	}
}

// The AVX2 kernels that store transposed (four rows, and six of two
// registers) put row i's column j at c[j*ldc+i], for each width, and
// write nothing else.
func TestGemm256KernelsT(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 and FMA here")
	}
	r := rand.New(rand.NewPCG(11, 12))
	type kern struct {
		m, z int
		f    gemmKernel
	}
	kerns := []kern{{4, 1, gemmY4_1_T}, {4, 2, gemmY4_2_T}, {4, 3, gemmY4_3_T}, {6, 2, gemm256KernelsT6[2]}}
	for _, kn := range kerns {
		m, z := kn.m, kn.z
		for _, k := range []int{1, 5, 64} {
			n := 8 * z
			lda, ldb, ldc := k+3, n+8, m+3
			a, b := randFloats(r, (m-1)*lda+k), randFloats(r, (k-1)*ldb+n)
			c := make([]float32, (n-1)*ldc+m+1)
			for i := range c {
				c[i] = 42
			}
			kn.f(&a[0], lda, &b[0], ldb, k, &c[0], ldc)
			for j := range n {
				for i := range m {
					want := 0.0
					for p := range k {
						want += float64(a[i*lda+p]) * float64(b[p*ldb+j])
					}
					if d := math.Abs(float64(c[j*ldc+i]) - want); d > 1e-5*(1+math.Abs(want)) {
						t.Fatalf("%d rows, z=%d, k=%d: c[%d][%d] = %g, want %g", m, z, k, j, i, c[j*ldc+i], want)
					}
				}
				for i := m; i < ldc && j*ldc+i < len(c); i++ {
					if c[j*ldc+i] != 42 {
						t.Fatalf("%d rows, z=%d, k=%d: wrote c[%d]", m, z, k, j*ldc+i)
					}
				}
			}
		}
	}
}

// sixRowTiles leaves the fewest rows to the edge kernels, then takes the
// most six-row tiles.
func TestSixRowTiles(t *testing.T) {
	for _, c := range []struct{ r, want int }{{0, 0}, {4, 0}, {6, 1}, {7, 1}, {8, 0}, {10, 1}, {12, 2}, {16, 2}, {40, 6}, {42, 7}} {
		if got := sixRowTiles(c.r); got != c.want {
			t.Errorf("sixRowTiles(%d) = %d, want %d", c.r, got, c.want)
		}
	}
}

package cpu

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/model"
	"stepthrough/engine/oracle"
	"stepthrough/engine/quant"
)

func randFloats(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// Every dot kernel agrees with the reference loop, over a sweep of sizes
// including ones that do not fill a vector register.
func TestDotKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 3, 7, 8, 9, 31, 32, 33, 64, 100, 288, 1000, 4099} {
		a, b := randFloats(r, n), randFloats(r, n+5) // b longer: kernels must read only len(a)
		want := float64(dotRef(a, b[:n]))
		tol := 1e-5 * math.Sqrt(float64(n)+1) * 4
		for name, got := range map[string]float32{"dot": dot(a, b), "dotGo": dotGo(a, b)} {
			if math.Abs(float64(got)-want) > tol {
				t.Errorf("%s n=%d: %g, reference %g", name, n, got, want)
			}
		}
	}
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 100, 576, 1000} { // F16 rows: the widening kernel, tails in Go
		x := randFloats(r, n)
		row, _ := quant.Quantize(quant.F16, randFloats(r, n))
		deq := make([]float32, n)
		quant.Dequantize(quant.F16, row, deq)
		want := float64(dotRef(deq, x))
		if got := dotF16(row, x); math.Abs(float64(got)-want) > 1e-5*math.Sqrt(float64(n)+1)*4 {
			t.Errorf("dotF16 n=%d: %g, reference %g", n, got, want)
		}
		wide := make([]float32, n)
		decodeRowInto(quant.F16, row, wide)
		if !slices.Equal(wide, deq) {
			t.Errorf("decodeRowInto F16 n=%d differs from quant.Dequantize", n)
		}
		// bfloat16 rows: the widening kernels, tails in Go; every bit
		// pattern decodes to its own bits (NaNs included)
		brow := make([]byte, 2*n)
		for i := range brow {
			brow[i] = byte(r.IntN(256))
		}
		for i := 1; i < len(brow); i += 2 {
			brow[i] &^= 0x40 // finite values only for the dot product
		}
		quant.Dequantize(quant.BF16, brow, deq)
		want, mag := float64(dotRef(deq, x)), 0.0
		for i := range x {
			mag += math.Abs(float64(deq[i]) * float64(x[i]))
		}
		if got := dotBF16(brow, x); math.Abs(float64(got)-want) > 1e-6*float64(n+1)*mag {
			t.Errorf("dotBF16 n=%d: %g, reference %g", n, got, want)
		}
		for i := range brow {
			brow[i] = byte(r.IntN(256))
		}
		quant.Dequantize(quant.BF16, brow, deq)
		decodeRowInto(quant.BF16, brow, wide)
		for i := range deq {
			if math.Float32bits(wide[i]) != math.Float32bits(deq[i]) {
				t.Fatalf("decodeRowInto BF16 n=%d: value %d = %#x, want %#x", n, i, math.Float32bits(wide[i]), math.Float32bits(deq[i]))
			}
		}
	}

}

// The Q8_0 int8 kernels (Go, AVX2, and the VNNI ones reading the laid-out
// vectors, one alone or eight a lane) equal the float product of the
// dequantized row with the rounded vector, for odd and even block counts
// and rows holding -128; and a vector's product is the same bit for bit
// whether it is multiplied alone or beside others.
func TestQ8_0Q80Kernels(t *testing.T) {
	for _, tiled := range []bool{false, true} {
		t.Run(fmt.Sprintf("tiled=%v", tiled), func(t *testing.T) { testQ8_0Q80Kernels(t, tiled) })
	}
}

// testQ8_0Q80Kernels is TestQ8_0Q80Kernels with several vectors through
// the lane kernel or (tiled) through the matrix in tiles of sixteen rows.
func testQ8_0Q80Kernels(t *testing.T, tiled bool) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ blocks, rows, n int }{
		{1, 5, 13}, {2, 5, 13}, {3, 5, 13}, {7, 5, 13}, {24, 5, 13}, {28, 5, 13},
		{3, 19, 2}, {5, 16, 8}, {24, 37, 9}, {1, 3, 7}, {6, 1, 17}, {4, 48, 16}, {2, 33, 3},
	} {
		blocks, rows, n := c.blocks, c.rows, c.n
		cols := blocks * 32
		data, _ := quant.Quantize(quant.Q8_0, randFloats(r, rows*cols))
		data[2] = 0x80 // a value of -128, which Quantize never writes
		var tiles []byte
		if tiled {
			if tiles = q80Tiles(&model.Tensor{Name: "w", Type: quant.Q8_0, Dims: []int{cols, rows}, Data: data}); tiles == nil {
				t.Skip("no tiled Q8_0 kernel on this machine")
			}
		}
		deq := make([]float32, rows*cols)
		quant.Dequantize(quant.Q8_0, data, deq)
		var z q80
		z.resize(n, cols, q80Lays(quant.Q8_0))
		z.tiled = tiled
		x := randFloats(r, n*cols)
		xr := make([]float32, n*cols)
		task := q80Task{z: &z, x: x, back: xr, n: n, cols: cols, lay: q80Lays(quant.Q8_0)}
		items, _ := task.items()
		task.Run(0, 0, items)
		out := make([]float32, n*rows)
		scratch := make([]float32, ScratchFloats(cols))
		dotRowsQ80(quant.Q8_0, data, 34*blocks, 0, rows, &z, n, cols, out, rows, q80BlockSums(data, rows, blocks), tiles, scratch)
		for row := range rows {
			raw := data[row*34*blocks : (row+1)*34*blocks]
			for v := range n {
				want := float64(dotRef(deq[row*cols:(row+1)*cols], xr[v*cols:(v+1)*cols]))
				got := map[string]float32{"rows": out[v*rows+row], "kernel": dotQ8_0Q80(raw, &z, v*blocks), "go": dotQ8_0Q80Go(raw, &z, v*blocks)}
				for name, g := range got {
					if math.Abs(float64(g)-want) > 1e-5*(1+math.Abs(want))*float64(blocks) {
						t.Errorf("%s blocks=%d row %d vector %d: %g, want %g", name, blocks, row, v, g, want)
					}
				}
			}
		}
		// alone: each vector in a product of its own, through the rows
		// and (tiled) through the tiles' one-vector kernel with the row
		// range cut inside a tile
		for v := range n {
			for _, viaTiles := range slices.Compact([]bool{false, tiled}) {
				var one q80
				one.tiled = viaTiles
				lay := q80Lays(quant.Q8_0) && (useQ80VNNI || !viaTiles) // as MatMul lays it
				one.resize(1, cols, lay)
				lone := q80Task{z: &one, x: x[v*cols : (v+1)*cols], n: 1, cols: cols, lay: lay}
				items, _ := lone.items()
				lone.Run(0, 0, items)
				alone := make([]float32, rows)
				var tl []byte
				if viaTiles {
					tl = tiles
				}
				cut := min(3, rows)
				dotRowsQ80(quant.Q8_0, data, 34*blocks, 0, cut, &one, 1, cols, alone, rows, nil, tl, scratch)
				dotRowsQ80(quant.Q8_0, data, 34*blocks, cut, rows, &one, 1, cols, alone, rows, nil, tl, scratch)
				for row := range rows {
					if alone[row] != out[v*rows+row] {
						t.Errorf("blocks=%d row %d vector %d tiles=%v: %g alone, %g beside %d others", blocks, row, v, viaTiles, alone[row], out[v*rows+row], n-1)
					}
				}
			}
		}
		if rows > 1 {
			part := make([]float32, n*rows)
			sums := q80BlockSums(data, rows, blocks)
			dotRowsQ80(quant.Q8_0, data, 34*blocks, 0, 1, &z, n, cols, part, rows, sums, tiles, scratch)
			dotRowsQ80(quant.Q8_0, data, 34*blocks, 1, rows, &z, n, cols, part, rows, sums, tiles, scratch)
			if diff := cmp.Diff(out, part); diff != "" {
				t.Errorf("blocks=%d rows=%d n=%d: rows [0,1) and [1,%d) apart differ from all at once (-whole +parts):\n%s", blocks, rows, n, rows, diff)
			}
		}
	}
}

// A Q8_0 matrix's block corrections are −128 times each block's sum, for
// any number of rows; a matrix keeps them across products and gets new
// ones when its bytes are replaced.
func TestQ8_0BlockSums(t *testing.T) {
	if !useQ80VNNI {
		t.Skip("no VNNI Q8_0 kernels on this machine: nothing reads the corrections")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ rows, blocks int }{{1, 1}, {3, 2}, {4, 3}, {9, 24}, {17, 5}} {
		data, _ := quant.Quantize(quant.Q8_0, randFloats(r, c.rows*c.blocks*32))
		data[2], data[3] = 0x80, 0x7f
		want := make([]int32, c.rows*c.blocks)
		for i := range want {
			var sum int32
			for _, b := range data[i*34+2 : i*34+34] {
				sum += int32(int8(b))
			}
			want[i] = -128 * sum
		}
		if diff := cmp.Diff(want, q80BlockSums(data, c.rows, c.blocks)); diff != "" {
			t.Errorf("rows=%d blocks=%d (-want +got):\n%s", c.rows, c.blocks, diff)
		}
	}
	data, _ := quant.Quantize(quant.Q8_0, randFloats(r, 5*64))
	w := &model.Tensor{Name: "w", Type: quant.Q8_0, Dims: []int{64, 5}, Data: data}
	first := blockSums(w)
	if again := blockSums(w); &again[0] != &first[0] {
		t.Error("a matrix's corrections were computed twice")
	}
	other, _ := quant.Quantize(quant.Q8_0, randFloats(r, 5*64))
	w.Data = other
	if diff := cmp.Diff(q80BlockSums(other, 5, 2), blockSums(w)); diff != "" {
		t.Errorf("after the bytes were replaced (-want +got):\n%s", diff)
	}
}

// The rounding of x to Q8_0 is the same bit for bit in every form this
// machine runs: random blocks, a block of zeros, values halfway between
// steps, values so small that d is a binary16 subnormal, and large ones.
func TestQuantizeQ80Forms(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	x := randFloats(r, 32*40)
	for i := range 32 {
		x[32+i] = 0                    // a block of zeros
		x[64+i] = float32(i-16) + 0.5  // max 15.5: halfway steps
		x[96+i] = float32(i+1) * 1e-7  // d subnormal in binary16
		x[128+i] = float32(i-16) * 3e4 // large
		x[160+i] = float32(r.NormFloat64()) * 1e-30
	}
	type rounded struct {
		Q    []int8
		D    []float32
		Back []float32
	}
	var want, got rounded
	for _, r := range []*rounded{&want, &got} {
		*r = rounded{make([]int8, len(x)), make([]float32, len(x)/32), make([]float32, len(x))}
	}
	quantizeQ80Go(x, want.Q, want.D, want.Back)
	quantizeQ80(x, got.Q, got.D, got.Back)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("quantizeQ80 differs from its Go form (-go +here):\n%s", diff)
	}
	for i, v := range want.Back {
		if v != want.D[i/32]*float32(want.Q[i]) {
			t.Fatalf("value %d rounded back to %g, want d·q = %g", i, v, want.D[i/32]*float32(want.Q[i]))
		}
	}
}

// The Q4_0 and Q5_0 int8 kernels equal their Go forms and the float
// product of the dequantized row with the rounded vector, for every block
// count, and the rounding is llama.cpp's (d kept as binary16, halves to
// even).
func TestLegacyQ80Kernels(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range []struct {
		typ          quant.Type
		kernel, inGo func([]byte, *q80, int) float32
	}{{quant.Q4_0, dotQ4_0Q80, dotQ4_0Q80Go}, {quant.Q5_0, dotQ5_0Q80, dotQ5_0Q80Go}} {
		for _, blocks := range []int{1, 2, 7, 28} {
			cols := blocks * 32
			row, _ := quant.Quantize(k.typ, randFloats(r, cols))
			deq := make([]float32, cols)
			quant.Dequantize(k.typ, row, deq)
			var z q80
			z.resize(2, cols, false)
			x := randFloats(r, 2*cols)
			xr := make([]float32, 2*cols)
			z.quantizeRange(x, 0, xr)
			for v := range 2 {
				want := float64(dotRef(deq, xr[v*cols:(v+1)*cols]))
				for name, got := range map[string]float32{"kernel": k.kernel(row, &z, v*blocks), "go": k.inGo(row, &z, v*blocks)} {
					if math.Abs(float64(got)-want) > 1e-5*(1+math.Abs(want))*float64(blocks) {
						t.Errorf("%v %s blocks=%d vector %d: %g, want %g", k.typ, name, blocks, v, got, want)
					}
				}
			}
		}
	}
	var z q80
	z.resize(1, 32, false)
	x := make([]float32, 32)
	x[0], x[1], x[2] = 127, 0.5, -1.5 // 0.5 and -1.5 halfway: to even
	z.quantizeRange(x, 0, nil)
	if z.q[0] != 127 || z.q[1] != 0 || z.q[2] != -2 || z.d[0] != 1 {
		t.Errorf("rounded %v, d %g", z.q[:3], z.d[0])
	}
}

// A Q4_0 or Q5_0 product gives each vector what it gives that vector
// alone, bit for bit, for batches below and (with the Q8_0 kernels, which
// take Q4_0 and Q5_0 rows rewritten as Q8_0) above 16 vectors and row
// counts that are and are not whole tiles, and stays near the float64
// reference.
func TestLegacyQ80BatchEqualsAlone(t *testing.T) {
	for _, typ := range []quant.Type{quant.Q4_0, quant.Q5_0} {
		t.Run(typ.String(), func(t *testing.T) { legacyBatchEqualsAlone(t, typ) })
	}
}

func legacyBatchEqualsAlone(t *testing.T, typ quant.Type) {
	r := rand.New(rand.NewPCG(15, 16))
	p := NewPool(2)
	defer p.Close()
	for _, c := range []struct{ rows, cols, n int }{{5, 96, 2}, {19, 192, 13}, {9, 768, 20}, {16, 64, 8}, {3, 32, 40}} {
		if c.n > kSmallBatch && !q80Lays(typ) {
			t.Logf("%d vectors: past %d, decoded rows take the batch where no VNNI kernel runs", c.n, kSmallBatch)
			continue
		}
		data, _ := quant.Quantize(typ, randFloats(r, c.rows*c.cols))
		w := &model.Tensor{Name: "w", Type: typ, Dims: []int{c.cols, c.rows}, Data: data}
		deq := make([]float32, c.rows*c.cols)
		quant.Dequantize(typ, data, deq)
		scratch := [][]float32{make([]float32, ScratchFloats(c.cols)), make([]float32, ScratchFloats(c.cols))}
		x := randFloats(r, c.n*c.cols)
		var zr q80 // x rounded as the kernels round it, for the reference
		zr.resize(c.n, c.cols, false)
		xr := make([]float32, c.n*c.cols)
		zr.quantizeRange(x, 0, xr)
		batched := make([]float32, c.n*c.rows)
		p.MatMul(batched, w, x, c.n, scratch)
		for v := range c.n {
			alone := make([]float32, c.rows)
			p.MatMul(alone, w, x[v*c.cols:(v+1)*c.cols], 1, scratch)
			if diff := cmp.Diff(alone, batched[v*c.rows:(v+1)*c.rows]); diff != "" {
				t.Errorf("%d×%d, vector %d of %d: batched differs from alone (-alone +batched):\n%s", c.rows, c.cols, v, c.n, diff)
			}
			for row := range c.rows {
				want := float64(dotRef(deq[row*c.cols:(row+1)*c.cols], xr[v*c.cols:(v+1)*c.cols]))
				if got := float64(alone[row]); math.Abs(got-want) > 1e-5*(1+math.Abs(want))*float64(c.cols/32) {
					t.Errorf("%d×%d, row %d vector %d: %g, want %g", c.rows, c.cols, row, v, got, want)
				}
			}
		}
	}
}

// The tile kernels agree with the reference loop, for k that are and are
// not multiples of the vector width.
func TestTileKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{1, 8, 15, 16, 33, 48, 64, 80, 172, 288, 768} {
		lda, ldx := k+3, k+1
		a, x := randFloats(r, 4*lda), randFloats(r, 4*ldx)
		want := func(i, j int) float64 { return float64(dotRef(a[i*lda:i*lda+k], x[j*ldx:j*ldx+k])) }
		tol := 1e-5 * float64(k)
		var o16 [16]float32
		gemm4x4(a, lda, x, ldx, k, &o16)
		var o9 [9]float32
		gemm3x3(a, lda, x, ldx, k, &o9)
		var o4 [4]float32
		gemv4(a[:3*lda+k], lda, x[:k], &o4)
		a8 := randFloats(r, 8*lda)
		var o8 [8]float32
		if gemv8(a8, lda, x[:k], &o8) {
			for i := range 8 {
				if want := float64(dotRef(a8[i*lda:i*lda+k], x[:k])); math.Abs(float64(o8[i])-want) > tol {
					t.Errorf("gemv8 k=%d [%d] = %g, want %g", k, i, o8[i], want)
				}
			}
		}
		for i := 0; i < 4; i++ {
			for j := 0; j < 4; j++ {
				if math.Abs(float64(o16[i*4+j])-want(i, j)) > tol {
					t.Errorf("gemm4x4 k=%d [%d][%d] = %g, want %g", k, i, j, o16[i*4+j], want(i, j))
				}
				if i < 3 && j < 3 && math.Abs(float64(o9[i*3+j])-want(i, j)) > tol {
					t.Errorf("gemm3x3 k=%d [%d][%d] = %g, want %g", k, i, j, o9[i*3+j], want(i, j))
				}
			}
			if math.Abs(float64(o4[i])-want(i, 0)) > tol {
				t.Errorf("gemv4 k=%d [%d] = %g, want %g", k, i, o4[i], want(i, 0))
			}
		}
		dst, src := randFloats(r, k), randFloats(r, k)
		ref := append([]float32(nil), dst...)
		axpyGo(ref, 0.5, src)
		axpy(dst, 0.5, src)
		for i := range dst {
			if math.Abs(float64(dst[i]-ref[i])) > 1e-6 {
				t.Fatalf("axpy k=%d [%d] = %g, want %g", k, i, dst[i], ref[i])
			}
		}
	}
}

// MatMul over every weight type equals the product with the dequantized
// matrix, for one and several input vectors, and leaves the guard region
// after the output untouched.
func TestMatMulAllTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pool := NewPool(3)
	defer pool.Close()
	for _, typ := range []quant.Type{quant.F32, quant.F16, quant.BF16, quant.Q8_0, quant.Q4_0, quant.Q4_1, quant.Q5_0, quant.Q5_1, quant.Q4_K, quant.Q5_K, quant.Q6_K} {
		cols, rows := 256, 37
		raw := make([]byte, 0)
		rb, _ := typ.RowBytes(cols)
		for i := 0; i < rows*rb; i++ {
			raw = append(raw, byte(r.IntN(256)))
		}
		if typ == quant.F32 || typ == quant.F16 || typ == quant.BF16 || typ == quant.Q8_0 || typ == quant.Q4_0 {
			raw, _ = quant.Quantize(typ, randFloats(r, rows*cols))
		} else { // random bytes, but keep the f16 scales finite and small
			fixScales(typ, raw)
		}
		w := &model.Tensor{Name: "w", Type: typ, Dims: []int{cols, rows}, Data: raw}
		deq := make([]float32, rows*cols)
		if err := quant.Dequantize(typ, raw, deq); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 3, 9, 20} { // 20: past the small-batch kernels, rows decoded for the tiles
			x := randFloats(r, n*cols)
			out := make([]float32, n*rows+8)
			for i := n * rows; i < len(out); i++ {
				out[i] = float32(math.NaN())
			}
			scratch := [][]float32{make([]float32, ScratchFloats(cols)), make([]float32, ScratchFloats(cols)), make([]float32, ScratchFloats(cols))}
			pool.MatMul(out, w, x, n, scratch)
			xr := x // Q4_K and Q6_K multiply x rounded to 8 bits (q8K), Q4_0, Q5_0 and Q8_0 x rounded to Q8_0 (q80)
			if hasQ8Kernel(typ, cols) {
				var z q8K
				z.resize(n, cols)
				quantizeQ8K(x, &z, 0)
				xr = make([]float32, n*cols)
				z.dequantize(xr)
			}
			if hasQ80Kernel(typ, cols) {
				var z q80
				z.resize(n, cols, false)
				xr = make([]float32, n*cols)
				z.quantizeRange(x, 0, xr)
			}
			for tk := 0; tk < n; tk++ {
				for rr := 0; rr < rows; rr++ {
					want := float64(dotRef(deq[rr*cols:(rr+1)*cols], xr[tk*cols:(tk+1)*cols]))
					got := float64(out[tk*rows+rr])
					if math.Abs(got-want) > 1e-3*(1+math.Abs(want)) {
						t.Fatalf("%s n=%d: out[%d][%d] = %g, want %g", typ, n, tk, rr, got, want)
					}
				}
			}
			for i := n * rows; i < len(out); i++ {
				if !math.IsNaN(float64(out[i])) {
					t.Fatalf("%s: MatMul wrote past its output at %d", typ, i)
				}
			}
		}
	}
}

// fixScales overwrites the f16 scale fields of random blocks with 0.01.
func fixScales(typ quant.Type, raw []byte) {
	bb := typ.BlockBytes()
	var offs []int
	switch typ {
	case quant.Q4_1, quant.Q5_1, quant.Q4_K, quant.Q5_K:
		offs = []int{0, 2}
	case quant.Q4_0, quant.Q5_0:
		offs = []int{0}
	case quant.Q6_K:
		offs = []int{208}
	}
	h := quant.F32ToF16(0.01)
	for b := 0; b+bb <= len(raw); b += bb {
		for _, o := range offs {
			raw[b+o], raw[b+o+1] = byte(h), byte(h>>8)
		}
	}
}

func TestSoftmaxAndNorms(t *testing.T) {
	x := []float32{1, 2, 3, float32(math.Inf(-1))}
	Softmax(x)
	want := []float64{0.09003057, 0.24472847, 0.66524096, 0}
	for i := range x {
		if math.Abs(float64(x[i])-want[i]) > 1e-6 {
			t.Errorf("softmax[%d] = %g, want %g", i, x[i], want[i])
		}
	}
	out := make([]float32, 2)
	RMSNorm(out, []float32{3, 4}, []float32{1, 2}, 0)
	// rms = sqrt((9+16)/2) = 3.5355
	if math.Abs(float64(out[0])-3/3.5355339) > 1e-6 || math.Abs(float64(out[1])-8/3.5355339) > 1e-6 {
		t.Errorf("RMSNorm = %v", out)
	}
	LayerNorm(out, []float32{1, 3}, []float32{1, 1}, []float32{0, 10}, 0)
	if math.Abs(float64(out[0])+1) > 1e-6 || math.Abs(float64(out[1])-11) > 1e-6 {
		t.Errorf("LayerNorm = %v", out)
	}
}

// synthModel builds and loads a random model.
func synthModel(t testing.TB, o model.SynthOptions) *model.Model {
	t.Helper()
	m, err := model.Random(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The Runner agrees with the float64 oracle for both architectures, GQA,
// tied and separate outputs, and several weight types.
func TestRunnerMatchesNaiveForward(t *testing.T) {
	for _, tc := range []model.SynthOptions{
		{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 32, Type: quant.F32},
		{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 4, FFN: 96, Vocab: 700, Context: 32, Type: quant.Q8_0, Tied: true},
		{Arch: "llama", Embd: 64, Layers: 1, Heads: 2, KVHeads: 1, FFN: 64, Vocab: 700, Context: 32, Type: quant.Q4_0},
		{Arch: "gpt2", Embd: 64, Layers: 2, Heads: 4, FFN: 128, Vocab: 600, Context: 32, Type: quant.F32, Tied: true},
		{Arch: "gpt2", Embd: 64, Layers: 2, Heads: 2, FFN: 96, Vocab: 600, Context: 32, Type: quant.F16},
	} {
		m := synthModel(t, tc)
		ids := m.Tokenizer.EncodeIDs("once upon a time the little cat saw a big red ball", true)
		want := oracle.Forward(m, ids)
		got := forwardAll(t, m, Options{Threads: 2, MaxBatch: 4}, ids)
		V := m.Config.Vocab
		var worst float64
		for p := range ids {
			for j := 0; j < V; j++ {
				worst = max(worst, math.Abs(float64(got[p*V+j])-want[p][j]))
			}
		}
		if worst > 1e-4 {
			t.Errorf("%s %s: max |runner - float64 oracle| = %g", tc.Arch, tc.Type, worst)
		}
	}
}

func TestForwardErrors(t *testing.T) {
	m := synthModel(t, model.SynthOptions{Arch: "gpt2", Embd: 32, Layers: 1, Heads: 2, FFN: 32, Vocab: 600, Context: 8, Type: quant.F32})
	r, err := NewRunner(m, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Forward(context.Background(), []int32{600}, false); err == nil {
		t.Error("token outside the vocabulary: want error")
	}
	if _, err := r.Forward(context.Background(), nil, false); err == nil {
		t.Error("no tokens: want error")
	}
	if _, err := r.Forward(context.Background(), make([]int32, 9), false); err == nil {
		t.Error("more tokens than the context: want error")
	}
	if _, err := NewRunner(m, Options{Context: 9}); err == nil {
		t.Error("context beyond gpt2's learned positions: want error")
	}
}

// GemmABT agrees with the reference loop for shapes that do and do not
// fill a tile, with strides wider than the rows.
func TestGemmABT(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, s := range []struct{ n, m, k int }{{1, 1, 1}, {4, 4, 16}, {5, 7, 33}, {9, 3, 32}, {13, 17, 100}, {3, 0, 5}, {2, 3, 0}} {
		lda, ldb, ldo := s.k+2, s.k+5, s.m+3
		a, b := randFloats(r, max(1, s.n*lda)), randFloats(r, max(1, s.m*ldb))
		out := randFloats(r, max(1, s.n*ldo))
		GemmABT(out, ldo, a, lda, b, ldb, s.n, s.m, s.k)
		for i := 0; i < s.n; i++ {
			for j := 0; j < s.m; j++ {
				want := float64(dotRef(a[i*lda:i*lda+s.k], b[j*ldb:j*ldb+s.k]))
				if got := float64(out[i*ldo+j]); math.Abs(got-want) > 1e-5*float64(s.k+1) {
					t.Errorf("%v [%d,%d]: %g, reference %g", s, i, j, got, want)
				}
			}
		}
	}
}

// A long prompt's attention runs in tiles (rows of 16 against every
// visible key at once): it agrees with the float64 oracle as the
// row-by-row path does, for both architectures and grouped-query heads,
// and a chunk cut across tiles gives the same logits as one pass.
func TestTiledAttentionMatchesNaiveForward(t *testing.T) {
	for _, tc := range []model.SynthOptions{
		{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 96, Type: quant.F32},
		{Arch: "gpt2", Embd: 64, Layers: 2, Heads: 2, FFN: 96, Vocab: 600, Context: 96, Type: quant.F32},
	} {
		m := synthModel(t, tc)
		ids := m.Tokenizer.EncodeIDs(strings.Repeat("once upon a time the little cat saw a big red ball. ", 3), true)
		if len(ids) < 2*tileMinRows+3 {
			t.Fatalf("prompt of %d tokens: too short for tiles", len(ids))
		}
		want := oracle.Forward(m, ids)
		V := m.Config.Vocab
		for _, chunk := range []int{64, 19} { // one pass; chunks that start mid-cache
			r, err := NewRunner(m, Options{Threads: 2, MaxBatch: chunk})
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Forward(context.Background(), ids, true)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			var worst float64
			for p := range ids {
				for j := 0; j < V; j++ {
					worst = max(worst, math.Abs(float64(got[p*V+j])-want[p][j]))
				}
			}
			if worst > 1e-4 {
				t.Errorf("%s chunks of %d: max |runner - float64 oracle| = %g", tc.Arch, chunk, worst)
			}
		}
	}
}

// MatMuls over matrices of one type (one dispatch) or of mixed K-quant
// types (as Q4_K_M's Q, K and V, one after the other) gives each product
// exactly what MatMul alone gives it, for one vector, a few and a tile's
// worth; and a buffer rewritten in place between calls is quantized again
// (the quantized x is shared only within one call).
func TestMatMulsSharesQuantizedX(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	pool := NewPool(3)
	defer pool.Close()
	cols := 512
	scratch := make([][]float32, 3)
	for i := range scratch {
		scratch[i] = make([]float32, ScratchFloats(cols))
	}
	for _, types := range [][]quant.Type{
		{quant.Q4_K, quant.Q6_K, quant.Q4_K}, {quant.Q4_K, quant.Q4_K, quant.Q4_K}, {quant.Q6_K, quant.Q6_K},
		{quant.Q8_0, quant.Q8_0, quant.Q8_0}, {quant.Q5_0, quant.Q5_0}, {quant.F32, quant.F32, quant.F32},
	} {
		var ws []*model.Tensor
		for i, typ := range types {
			raw, err := quant.Quantize(typ, randFloats(r, (40+8*i)*cols))
			if err != nil {
				t.Fatal(err)
			}
			ws = append(ws, &model.Tensor{Name: "w", Type: typ, Dims: []int{cols, 40 + 8*i}, Data: raw})
		}
		for _, n := range []int{1, 3, 9, 20} {
			x := randFloats(r, n*cols)
			for round := range 2 {
				outs := make([][]float32, len(ws))
				for i, w := range ws {
					outs[i] = make([]float32, n*w.Rows())
				}
				pool.MatMuls(outs, ws, x, n, scratch)
				for i, w := range ws {
					want := make([]float32, n*w.Rows())
					pool.MatMul(want, w, x, n, scratch)
					if !slices.Equal(outs[i], want) {
						t.Fatalf("%v n=%d round %d: MatMuls product %d differs from MatMul alone", types, n, round, i)
					}
				}
				for i := range x { // the same buffer, new values
					x[i] = -x[i] * 0.5
				}
			}
		}
	}
}

// A Q8_0 product takes its path by the longest run one sequence brings
// (Pool.SetRun), not only by its vector count: where the int8 kernels
// take one vector at a time, 32 vectors of one prompt chunk go through
// decoded rows, bit for bit what a product forced onto them gives; with
// the VNNI kernels (eight vectors a lane each, faster at every count) the
// chunk stays on them too. 32 decode steps' vectors (runs of 1) stay on
// the int8 kernels, each equal to its product alone.
func TestQ8_0PathFollowsTheRun(t *testing.T) {
	const rows, cols, n = 40, 256, 32
	r := rand.New(rand.NewPCG(3, 4))
	data, _ := quant.Quantize(quant.Q8_0, randFloats(r, rows*cols))
	w := &model.Tensor{Name: "w", Type: quant.Q8_0, Dims: []int{cols, rows}, Data: data}
	p := NewPool(2)
	defer p.Close()
	scratch := [][]float32{make([]float32, ScratchFloats(cols)), make([]float32, ScratchFloats(cols))}
	x := randFloats(r, n*cols)
	product := func(run, smallBatch int) []float32 {
		old := q80SmallBatchQ8_0
		q80SmallBatchQ8_0 = smallBatch
		defer func() { q80SmallBatchQ8_0 = old }()
		p.SetRun(run)
		defer p.SetRun(0)
		out := make([]float32, n*rows)
		p.MatMul(out, w, x, n, scratch)
		return out
	}
	decoded := product(0, 0)
	int8 := product(1, q80SmallBatchQ8_0)
	chunkPath, chunkWant := "decoded rows", decoded
	if q80Lays(quant.Q8_0) {
		chunkPath, chunkWant = "the int8 kernels", int8
	}
	if diff := cmp.Diff(chunkWant, product(n, q80SmallBatchQ8_0)); diff != "" {
		t.Errorf("a chunk of %d vectors did not take %s (-that path +chunk):\n%s", n, chunkPath, diff)
	}
	if cmp.Equal(decoded, int8) {
		t.Fatal("the int8 kernels and decoded rows agree bit for bit here, so the test cannot tell the paths apart")
	}
	for v := range n {
		alone := make([]float32, rows)
		p.SetRun(1)
		p.MatMul(alone, w, x[v*cols:(v+1)*cols], 1, scratch)
		p.SetRun(0)
		if diff := cmp.Diff(alone, int8[v*rows:(v+1)*rows]); diff != "" {
			t.Fatalf("decode vector %d beside %d others differs from alone (-alone +batched):\n%s", v, n-1, diff)
		}
	}
}

// TestAttentionPartsAgree: a token's heads split across parts (as a long
// context splits them), or taken a head per pass over the cache (as a
// context too long for all heads' scores takes them), give the logits
// one part gives, bit for bit, on
// decode steps of one token, with grouped-query heads and a sliding window.
func TestAttentionPartsAgree(t *testing.T) {
	for _, tc := range []model.SynthOptions{
		{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 32, Type: quant.F32},
		{Arch: "gemma2", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 32, Type: quant.F32},
	} {
		m := synthModel(t, tc)
		ids := m.Tokenizer.EncodeIDs("once upon a time the little cat saw a big red ball", true)
		one := forwardAll(t, m, Options{Threads: 2, MaxBatch: 1}, ids)
		oldWork, oldFloats := attnMinWork, attnScoreFloats
		attnMinWork = 1
		parts := forwardAll(t, m, Options{Threads: 2, MaxBatch: 1}, ids)
		attnMinWork, attnScoreFloats = oldWork, 1 // scores for one head: a pass per head
		passes := forwardAll(t, m, Options{Threads: 2, MaxBatch: 1}, ids)
		attnScoreFloats = oldFloats
		for i := range one {
			if one[i] != parts[i] || one[i] != passes[i] {
				t.Fatalf("%s: logit %d is %g in parts, %g a head per pass, %g in one", tc.Arch, i, parts[i], passes[i], one[i])
			}
		}
	}
}

// The laid-out form of a rounded vector is the same bit for bit from the
// kernel and from Go, for odd and even block counts and values of -128
// and 127 (the largest corrections).
func TestLayQ80(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, blocks := range []int{1, 2, 3, 7, 24, 96} {
		q := make([]int8, blocks*32)
		for i := range q {
			q[i] = int8(r.IntN(256) - 128)
		}
		for i := range 4 {
			q[i], q[4+i] = -128, 127
		}
		d := make([]float32, blocks)
		for i := range d {
			d[i] = r.Float32()
		}
		words := (blocks + 1) / 2 * 48
		want, got := make([]uint32, words), make([]uint32, words)
		layQ80Go(q, d, want)
		layQ80(q, d, got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("blocks=%d: layQ80 differs from layQ80Go (-go +here):\n%s", blocks, diff)
		}
	}
}

// The attention kernels over whole cached rows give every head exactly
// what dot and axpy give it one position at a time: one query head per key
// head or groups of them (the first head anywhere in its group), head
// sizes of 32s and 8s, rows wider than the heads.
func TestAttentionRowKernels(t *testing.T) {
	if !hasRowKernels(8) {
		t.Skip("no row kernels here")
	}
	r := rand.New(rand.NewPCG(13, 14))
	for _, c := range []struct{ nh, hd, g0, group int }{{1, 8, 0, 1}, {12, 64, 0, 1}, {6, 32, 0, 1}, {8, 64, 1, 4}, {5, 72, 2, 3}, {3, 128, 0, 2}, {4, 256, 1, 2}} {
		kvHeads := (c.g0+c.nh-1)/c.group + 1
		stride := kvHeads*c.hd + 8
		for _, npos := range []int{1, 8, 9, 17} {
			q, rows := randFloats(r, c.nh*c.hd), randFloats(r, (npos-1)*stride+kvHeads*c.hd)
			kv := func(h, j int) []float32 { return rows[j*stride+(c.g0+h)/c.group*c.hd:][:c.hd] }
			if npos >= 8 {
				const ostride = 11
				out := make([]float32, (c.nh-1)*ostride+8)
				scoreRows8(q, rows[(npos-8)*stride:], stride, c.nh, c.hd, c.g0, c.group, 0.125, out, ostride, make([]float32, 64*c.nh))
				for h := range c.nh {
					for j := range 8 {
						if s := dot(q[h*c.hd:][:c.hd], kv(h, npos-8+j)) * 0.125; math.Float32bits(out[h*ostride+j]) != math.Float32bits(s) {
							t.Errorf("%+v npos=%d: head %d position %d scores %g, dot gives %g", c, npos, h, j, out[h*ostride+j], s)
						}
					}
				}
			}
			wstride := npos + 3
			w, acc := randFloats(r, c.nh*wstride), randFloats(r, c.nh*c.hd)
			want := slices.Clone(acc)
			valueRows(acc, w, wstride, rows, stride, npos, c.nh, c.hd, c.g0, c.group)
			for j := range npos {
				for h := range c.nh {
					axpy(want[h*c.hd:][:c.hd], w[h*wstride+j], kv(h, j))
				}
			}
			if !slices.Equal(acc, want) {
				t.Errorf("%+v npos=%d: the heads' sums differ from axpy position by position", c, npos)
			}
		}
	}
}

// The attention kernels over a run of cached rows give a head exactly
// what dot and axpy give it one position at a time: runs of every length
// around the four or eight positions the score kernels reduce together,
// head sizes of whole 64s, then 32s or 16s, then 8s or 4s (those the
// CPU's kernels take), rows wider than the head.
func TestAttentionRunKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	ran := false
	for _, hd := range []int{4, 8, 20, 24, 32, 64, 72, 96, 128, 256} {
		for _, npos := range []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33} {
			stride := hd*3 + 8
			q, rows := randFloats(r, hd), randFloats(r, (npos-1)*stride+hd)
			out := make([]float32, npos+1)
			out[npos] = 42
			if !scoreRun(q, rows, stride, npos, hd, 0.125, out) {
				continue // a head size this CPU's kernels do not take
			}
			ran = true
			for j := range npos {
				if s := dot(q, rows[j*stride:][:hd]) * 0.125; math.Float32bits(out[j]) != math.Float32bits(s) {
					t.Errorf("hd=%d npos=%d: score %d is %g, dot gives %g", hd, npos, j, out[j], s)
				}
			}
			if out[npos] != 42 {
				t.Errorf("hd=%d npos=%d: wrote past the run's scores", hd, npos)
			}
			w, acc := randFloats(r, npos), randFloats(r, hd+1)
			want := slices.Clone(acc)
			valueRun(acc[:hd], w, rows, stride, npos, hd)
			for j := range npos {
				axpy(want[:hd], w[j], rows[j*stride:][:hd])
			}
			if !slices.Equal(acc, want) {
				t.Errorf("hd=%d npos=%d: the sums differ from axpy position by position", hd, npos)
			}
		}
	}
	if !ran {
		t.Skip("no attention kernels here")
	}
}

//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// The Q4_K and Q6_K lane kernels give each of several vectors exactly
// what the one-vector kernels give it (bit for bit), for any number of
// vectors and rows (whole groups of eight and four and the rest), on
// quantized rows and on random bytes, and both stay near the Go reference.
func TestDotKQ8Lanes(t *testing.T) {
	if !kq8Lanes(quant.Q4_K) {
		t.Skip("this CPU has no AVX-512 VNNI: the lane kernels do not run here")
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct{ cols, rows, n int }{{256, 1, 2}, {256, 7, 8}, {768, 9, 5}, {768, 4, 13}, {2048, 6, 16}, {512, 3, 3}} {
		x := make([]float32, c.n*c.cols)
		for i := range x {
			x[i] = float32(r.NormFloat64()) * float32(1+i%5)
		}
		var z q8K
		z.resize(c.n, c.cols)
		quantizeQ8K(x, &z, 0)
		z.resizeLanes(c.n, c.cols)
		z.layLanes(0, laneBlocks(c.n, c.cols), c.n, c.cols)
		w := make([]float32, c.rows*c.cols)
		for i := range w {
			w[i] = float32(r.NormFloat64())
		}
		for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
			quantized, err := quant.Quantize(typ, w)
			if err != nil {
				t.Fatal(err)
			}
			bb := typ.BlockBytes()
			random := make([]byte, len(quantized))
			for i := range random {
				random[i] = byte(r.Uint32())
			}
			for i := 0; i < len(random); i += bb { // finite block scales
				if typ == quant.Q4_K {
					random[i+1], random[i+3] = random[i+1]&0x3b, random[i+3]&0x3b
				} else {
					random[i+209] &= 0x3b
				}
			}
			nb, rb := c.cols/256, c.cols/256*bb
			k := kq8Kernels[typ].fn
			for name, data := range map[string][]byte{"quantized": quantized, "random": random} {
				out := make([]float32, c.n*c.rows)
				sums := kBlockSums(typ, data, c.rows, nb)
				cut := c.rows / 3 // two ranges, as workers take them: the second from a row not a multiple of four
				dotRowsKQ8Multi(typ, data, rb, 0, cut, &z, c.n, nb, out, c.rows, sums, nil)
				dotRowsKQ8Multi(typ, data, rb, cut, c.rows, &z, c.n, nb, out, c.rows, sums, nil)
				for row := range c.rows {
					raw := data[row*rb : (row+1)*rb]
					for v := range c.n {
						got := out[v*c.rows+row]
						alone := k(&raw[0], &z.q[v*nb*256], &z.bs[v*nb*16], &z.d[v*nb], nb, &f16Table[0])
						if math.Float32bits(got) != math.Float32bits(alone) {
							t.Errorf("%s %d×%d, %s rows, row %d vector %d of %d: %g in lanes, %g alone", typ, c.rows, c.cols, name, row, v, c.n, got, alone)
						}
						if ref := dotKQ8Go(typ, raw, &z, v*nb); name == "quantized" && math.Abs(float64(got-ref)) > 1e-4*(1+math.Abs(float64(ref))) {
							t.Errorf("%s %d×%d, row %d vector %d: %g, Go reference %g", typ, c.rows, c.cols, row, v, got, ref)
						}
					}
				}
			}
		}
	}
}

// BenchmarkKQ8Batch is one Q4_K or Q6_K matrix (2048 × 768) times 8
// vectors: each vector alone through the one-vector kernel, eight at a
// time through the AVX2 kernel over the matrix (v8avx2) and in tiles of
// eight rows, or a vector per lane (the VNNI lane kernel where it runs,
// else v8avx2).
func BenchmarkKQ8Batch(b *testing.B) {
	const rows, cols, n = 2048, 768, 8
	r := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	var z q8K
	z.resize(n, cols)
	quantizeQ8K(x, &z, 0)
	out := make([]float32, n*rows)
	nb := cols / 256
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		data, _ := quant.Quantize(typ, w)
		rb := nb * typ.BlockBytes()
		k := kq8Kernels[typ]
		b.Run(typ.String()+"/alone", func(b *testing.B) {
			for b.Loop() {
				for row := range rows {
					for v := range n {
						out[v*rows+row] = k.fn(&data[row*rb], &z.q[v*nb*256], &z.bs[v*nb*16], &z.d[v*nb], nb, &f16Table[0])
					}
				}
			}
		})
		b.Run(typ.String()+"/v8avx2", func(b *testing.B) {
			if !useAVX2 {
				b.Skip("no AVX2")
			}
			z.resizeLanes(n, cols)
			old := useKQ8AVX2
			useKQ8AVX2 = true
			z.layLanes(0, laneBlocks(n, cols), n, cols)
			useKQ8AVX2 = old
			for b.Loop() {
				dotRowsKQ8AVX2(typ, data, rb, 0, rows, &z, n, nb, out, rows)
			}
		})
		b.Run(typ.String()+"/tiles", func(b *testing.B) {
			if _, ok := kR8[typ]; !ok || !useAVX2 {
				b.Skip("no tile kernel")
			}
			tiles := kR8[typ].repack(data, rows, nb)
			for b.Loop() {
				kR8Rows(typ, tiles, 0, rows, &z, n, nb, out, rows)
			}
		})
		b.Run(typ.String()+"/lanes", func(b *testing.B) {
			if !kq8Lanes(typ) {
				b.Skip("no lane kernels here")
			}
			z.resizeLanes(n, cols)
			z.layLanes(0, laneBlocks(n, cols), n, cols)
			sums := kBlockSums(typ, data, rows, nb)
			for b.Loop() {
				dotRowsKQ8Multi(typ, data, rb, 0, rows, &z, n, nb, out, rows, sums, nil)
			}
		})
	}
}

// BenchmarkKQ8Paths is a K-quant matrix (2048 × 768) times n vectors
// through MatMul, the int8 kernels against decoded rows and the GEMM: where
// kQ8SmallBatch should sit.
func BenchmarkKQ8Paths(b *testing.B) {
	const rows, cols = 2048, 768
	r := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	p := NewPool(2)
	defer p.Close()
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		data, _ := quant.Quantize(typ, w)
		t := &model.Tensor{Name: "w", Type: typ, Dims: []int{cols, rows}, Data: data}
		for _, n := range []int{8, 16, 32, 64} {
			x := make([]float32, n*cols)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			out := make([]float32, n*rows)
			scratch := make([][]float32, 2)
			for i := range scratch {
				scratch[i] = make([]float32, ScratchFloats(cols))
			}
			for _, path := range []struct {
				name string
				max  int
			}{{"int8", 1 << 20}, {"decoded", 0}} {
				b.Run(fmt.Sprintf("%s/%d/%s", typ, n, path.name), func(b *testing.B) {
					old := kQ8SmallBatch
					kQ8SmallBatch = path.max
					defer func() { kQ8SmallBatch = old }()
					for b.Loop() {
						p.MatMul(out, t, x, n, scratch)
					}
				})
			}
		}
	}
}

// A Q4_K or Q6_K matrix's block corrections come from the per-matrix
// cache laid out as the lane kernels read them.
func TestKBlockSumsCached(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		w := make([]float32, 6*512)
		for i := range w {
			w[i] = float32(r.NormFloat64())
		}
		data, _ := quant.Quantize(typ, w)
		m := &model.Tensor{Name: "k", Type: typ, Dims: []int{512, 6}, Data: data}
		first := blockSums(m)
		if diff := cmp.Diff(kBlockSums(typ, data, 6, 2), first); diff != "" {
			t.Errorf("%s (-want +got):\n%s", typ, diff)
		}
		if again := blockSums(m); &again[0] != &first[0] {
			t.Errorf("%s: a matrix's corrections were computed twice", typ)
		}
	}
}

// The block sums the corrections come from are the blocks' products with
// a vector of ones, on random bytes (every nibble and two-bit pattern).
func TestKBlockSumsAreProductsWithOnes(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	ones := make([]int8, 256)
	for i := range ones {
		ones[i] = 1
	}
	for range 200 {
		var b4 [144]byte
		var b6 [210]byte
		for i := range b4 {
			b4[i] = byte(r.Uint32())
		}
		for i := range b6 {
			b6[i] = byte(r.Uint32())
		}
		if got, want := q4KSums(&b4), q4KScaled(b4[:], ones); got != want {
			t.Fatalf("Q4_K block %x: %d, product with ones %d", b4, got, want)
		}
		if got, want := q6KSums(&b6), q6KScaled(b6[:], ones); got != want {
			t.Fatalf("Q6_K block %x: %d, product with ones %d", b6, got, want)
		}
	}
}

// The four-row Q4_K kernel gives each row the one-row kernel's result bit
// for bit, on quantized rows and random bytes, rows whole quarters of the
// range and not.
func TestDotQ4_KRows4(t *testing.T) {
	if !useF16C {
		t.Skip("no AVX2 and F16C here")
	}
	r := rand.New(rand.NewPCG(13, 14))
	for _, c := range []struct{ cols, rows int }{{256, 4}, {768, 9}, {2048, 17}, {512, 3}} {
		z, rowSets := kTestCase(r, quant.Q4_K, 1, c.cols, c.rows)
		nb := c.cols / 256
		rb := nb * 144
		for name, data := range rowSets {
			out := make([]float32, c.rows)
			dotRowsKQ8(quant.Q4_K, data, rb, 0, c.rows, z, out)
			for row := range c.rows {
				alone := dotQ4_KQ8AVX2(&data[row*rb], &z.q[0], &z.bs[0], &z.d[0], nb, &f16Table[0])
				if math.Float32bits(out[row]) != math.Float32bits(alone) {
					t.Errorf("%d×%d %s, row %d: %g four at a time, %g alone", c.rows, c.cols, name, row, out[row], alone)
				}
			}
		}
	}
}

// BenchmarkQ4_KRows is one Q4_K matrix (2048 × 768, in L2) times one
// vector on one thread: the one-row kernel a row at a time against the
// four-row one (dotRowsKQ8).
func BenchmarkQ4_KRows(b *testing.B) {
	const rows, cols = 2048, 768
	r := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	data, _ := quant.Quantize(quant.Q4_K, w)
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	var z q8K
	z.resize(1, cols)
	quantizeQ8K(x, &z, 0)
	out := make([]float32, rows)
	rb, nb := cols/256*144, cols/256
	b.Run("row", func(b *testing.B) {
		for b.Loop() {
			for row := range rows {
				out[row] = dotQ4_KQ8AVX2(&data[row*rb], &z.q[0], &z.bs[0], &z.d[0], nb, &f16Table[0])
			}
		}
	})
	b.Run("rows4", func(b *testing.B) {
		for b.Loop() {
			dotRowsKQ8(quant.Q4_K, data, rb, 0, rows, &z, out)
		}
	})
}

// The K-quant tile kernels (Q4_K's) give each of several vectors exactly
// what the one-vector kernel gives it, for whole and part groups of eight,
// ranges cut inside a tile, on quantized rows and random bytes.
func TestKTiles(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 here")
	}
	r := rand.New(rand.NewPCG(17, 18))
	for typ := range kR8 {
		for _, c := range []struct{ cols, rows, n int }{{256, 8, 8}, {768, 13, 5}, {512, 21, 9}, {2048, 9, 16}, {256, 3, 2}} {
			z, rowSets := kTestCase(r, typ, c.n, c.cols, c.rows)
			nb := c.cols / 256
			rb := nb * typ.BlockBytes()
			k := kq8Kernels[typ].fn
			for name, data := range rowSets {
				tiles := kR8[typ].repack(data, c.rows, nb)
				out := make([]float32, c.n*c.rows)
				cut := c.rows / 3
				kR8Rows(typ, tiles, 0, cut, z, c.n, nb, out, c.rows)
				kR8Rows(typ, tiles, cut, c.rows, z, c.n, nb, out, c.rows)
				for row := range c.rows {
					for v := range c.n {
						alone := k(&data[row*rb], &z.q[v*nb*256], &z.bs[v*nb*16], &z.d[v*nb], nb, &f16Table[0])
						if got := out[v*c.rows+row]; math.Float32bits(got) != math.Float32bits(alone) {
							t.Errorf("%s %d×%d %s, row %d vector %d of %d: %g in tiles, %g alone", typ, c.rows, c.cols, name, row, v, c.n, got, alone)
						}
					}
				}
			}
		}
	}
}

// kTestCase is n vectors of cols values quantized for the K-quant
// kernels, and rows rows of type typ (Q4_K or Q6_K) of cols values, both
// quantized from normal values and random bytes (block scales kept
// finite).
func kTestCase(r *rand.Rand, typ quant.Type, n, cols, rows int) (*q8K, map[string][]byte) {
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64()) * float32(1+i%5)
	}
	z := new(q8K)
	z.resize(n, cols)
	quantizeQ8K(x, z, 0)
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	quantized, _ := quant.Quantize(typ, w)
	random := make([]byte, len(quantized))
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	bb := typ.BlockBytes()
	for i := 0; i < len(random); i += bb { // finite block scales
		if typ == quant.Q4_K {
			random[i+1], random[i+3] = random[i+1]&0x3b, random[i+3]&0x3b
		} else {
			random[i+209] &= 0x3b
		}
	}
	return z, map[string][]byte{"quantized": quantized, "random": random}
}

//go:build !purego

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/quant"
)

// The AVX2 Q8_0 kernels give the VNNI kernels' results bit for bit, one
// vector and groups of eight (full and part full), rows whole quarters
// and not, rows holding -128 and 127 against vectors holding ±127: a
// product's logits are then the same at either level. Where the CPU has
// no VNNI, only the AVX2 kernels run and the other tests check them
// against the float product.
func TestQ8_0AVX2MatchesVNNI(t *testing.T) {
	if !useQ80VNNI || !useF16C {
		t.Skip("needs both the VNNI and the AVX2 Q8_0 kernels")
	}
	r := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct{ blocks, rows, n int }{
		{1, 4, 1}, {3, 9, 1}, {24, 37, 1}, {2, 5, 2}, {24, 21, 8}, {7, 16, 9}, {64, 19, 16}, {5, 3, 13},
	} {
		t.Run(fmt.Sprintf("%dx%dx%d", c.rows, c.blocks, c.n), func(t *testing.T) {
			cols := c.blocks * 32
			data, _ := quant.Quantize(quant.Q8_0, randFloats(r, c.rows*cols))
			for i := 0; i < len(data); i += 34 * 3 { // a -128 and a 127 in every third block
				data[i+2+r.IntN(32)], data[i+2+r.IntN(32)] = 0x80, 0x7f
			}
			x := randFloats(r, c.n*cols)
			for i := 0; i < len(x); i += 32 * 2 { // a -127 where a block's max is negative
				x[i+r.IntN(32)] = -100
			}
			nb := c.blocks
			rb := 34 * nb
			vnni := make([]float32, c.n*c.rows)
			var zv q80
			zv.resize(c.n, cols, true)
			(&q80Task{z: &zv, x: x, n: c.n, cols: cols, lay: true}).runAll()
			var sums []int32
			if c.n > 1 {
				sums = q80BlockSums(data, c.rows, nb)
			}
			q80Rows(data, rb, 0, c.rows, 0, &zv, c.n, nb, vnni, c.rows, sums)

			old := q80Halves
			q80Halves = true
			defer func() { q80Halves = old }()
			var za q80
			za.resize(c.n, cols, c.n > 1)
			(&q80Task{z: &za, x: x, n: c.n, cols: cols, lay: c.n > 1}).runAll()
			avx2 := make([]float32, c.n*c.rows)
			q80RowsAVX2(data, rb, 0, c.rows, 0, &za, c.n, nb, avx2, c.rows)
			if diff := cmp.Diff(vnni, avx2); diff != "" {
				t.Errorf("AVX2 differs from VNNI (-vnni +avx2):\n%s", diff)
			}
			if c.n > 1 { // and in tiles of eight rows, the range cut inside a tile
				tiles := repackR8(data, c.rows, nb)
				tiled := make([]float32, c.n*c.rows)
				scratch := make([]float32, 64)
				cut := c.rows / 3
				r8Rows(tiles, 0, cut, &za, c.n, nb, tiled, c.rows, scratch)
				r8Rows(tiles, cut, c.rows, &za, c.n, nb, tiled, c.rows, scratch)
				if diff := cmp.Diff(vnni, tiled); diff != "" {
					t.Errorf("AVX2 tiles differ from VNNI (-vnni +tiles):\n%s", diff)
				}
			}
		})
	}
}

// runAll runs the whole task on the calling goroutine.
func (t *q80Task) runAll() {
	items, _ := t.items()
	t.Run(0, 0, items)
}

// BenchmarkQ8_0AVX2Kernels is one thread's Q8_0 product of the 110M
// shape's FFN matrix (2048 × 768, in L2 and L3) with eight vectors and
// with one, through the AVX2 kernels (eight vectors: over the matrix and
// in tiles of eight rows) against the one-row one-vector kernel they
// replaced (dotQ8_0Q80AVX2), in multiply-adds per second.
func BenchmarkQ8_0AVX2Kernels(b *testing.B) {
	if !useF16C {
		b.Skip("no AVX2 kernels")
	}
	const cols, nb = 768, 768 / 32
	rows := 2048
	if v := os.Getenv("ROWS"); v != "" { // fewer, to run from L2
		rows, _ = strconv.Atoi(v)
	}
	r := rand.New(rand.NewPCG(1, 2))
	data, _ := quant.Quantize(quant.Q8_0, randFloats(r, rows*cols))
	for _, n := range []int{1, 8} {
		x := randFloats(r, n*cols)
		old := q80Halves
		q80Halves = true
		var z q80
		z.resize(n, cols, n > 1)
		(&q80Task{z: &z, x: x, n: n, cols: cols, lay: n > 1}).runAll()
		q80Halves = old
		out := make([]float32, n*rows)
		report := func(b *testing.B) {
			b.ReportMetric(float64(rows*cols*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		}
		b.Run(fmt.Sprintf("n=%d/rowvector", n), func(b *testing.B) {
			for b.Loop() {
				dotRowsQ80Each(quant.Q8_0, data, 34*nb, 0, rows, &z, n, cols, out, rows)
			}
			report(b)
		})
		b.Run(fmt.Sprintf("n=%d/avx2", n), func(b *testing.B) {
			for b.Loop() {
				q80RowsAVX2(data, 34*nb, 0, rows, 0, &z, n, nb, out, rows)
			}
			report(b)
		})
		if n > 1 {
			tiles, scratch := repackR8(data, rows, nb), make([]float32, 64)
			b.Run(fmt.Sprintf("n=%d/tiles", n), func(b *testing.B) {
				for b.Loop() {
					r8Rows(tiles, 0, rows, &z, n, nb, out, rows, scratch)
				}
				report(b)
			})
		}
	}
}

// The Q4_0 row kernel (one vector, four rows a call) gives what the Q8_0
// kernel gives the rows unpacked as Q8_0 (unpackQ4_0AVX2), bit for bit,
// and the unpacked values are the dequantized ones over d: for random
// nibbles and scales, vectors at ±127, block counts around the loop, and
// rows from the range's quarters and alone.
func TestQ4_0RowsAVX2(t *testing.T) {
	if !useAVX2 || !useF16C {
		t.Skip("no AVX2 and F16C here")
	}
	r := rand.New(rand.NewPCG(41, 42))
	for _, c := range []struct{ blocks, rows int }{{1, 4}, {2, 5}, {3, 9}, {24, 16}, {28, 7}, {96, 3}} {
		cols, rb := c.blocks*32, c.blocks*18
		data := make([]byte, c.rows*rb)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		for b := 0; b < len(data); b += 18 { // scales: random, finite
			h := quant.F32ToF16(r.Float32()*0.1 - 0.05)
			data[b], data[b+1] = byte(h), byte(h>>8)
		}
		unpacked := make([]byte, c.rows*34*c.blocks)
		unpackQ4_0AVX2(&data[0], c.rows*c.blocks, &unpacked[0])
		deq := make([]float32, c.rows*cols)
		quant.Dequantize(quant.Q4_0, data, deq)
		for i, v := range deq {
			blk := unpacked[i/32*34:]
			if got := half16(blk) * float32(int8(blk[2+i%32])); got != v {
				t.Fatalf("blocks=%d value %d unpacked as %g, dequantized %g", c.blocks, i, got, v)
			}
		}
		var z q80
		z.resize(1, cols, false)
		x := randFloats(r, cols)
		x[0], x[1] = 1, -1 // the block's extremes: ±127
		z.quantizeRange(x, 0, nil)
		got := make([]float32, c.rows)
		q40RowsAVX2(data, rb, 0, c.rows, &z, c.blocks, got)
		want := make([]float32, c.rows)
		q80RowsAVX2(unpacked, 34*c.blocks, 0, c.rows, 0, &z, 1, c.blocks, want, c.rows)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Errorf("blocks=%d rows=%d row %d: %g, the unpacked rows give %g", c.blocks, c.rows, i, got[i], want[i])
			}
		}
	}
}

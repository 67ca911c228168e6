//go:build !purego

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"

	"stepthrough/engine/quant"
)

//go:noescape
func dotAVX2(a, b []float32) float32

//go:noescape
func dequantQ8_0AVX2(row *byte, out *float32, blocks int, f16 *float32)

//go:noescape
func packGather16AVX512(x *float32, cols int, d *float32, w int, idx *int32)

//go:noescape
func packT8AVX2(x *float32, cols int, d *float32, w int)

// packGroup is how many vectors packVectors takes at a time here: 16
// (one gather per value, AVX-512) or 8 (eight by eight transposes in
// registers, AVX2).
var packGroup = func() int {
	if useGemmB {
		return 16
	}
	return 8
}()

// packVectors writes packGroup vectors of x (rows of cols floats, from
// x[0]) transposed into columns of d (rows of w floats, from d[0]),
// reporting false (nothing done) where no kernel runs.
func packVectors(x []float32, cols int, d []float32, w int) bool {
	if packGroup == 8 {
		if !useAVX2 || cols == 0 || cols%8 != 0 {
			return false
		}
		_ = x[8*cols-1]
		_ = d[(cols-1)*w+7]
		packT8AVX2(&x[0], cols, &d[0], w)
		return true
	}
	if !useGemmB || cols == 0 || 16*cols > 1<<31-1 {
		return false
	}
	_ = x[16*cols-1]
	_ = d[(cols-1)*w+15]
	var idx [16]int32
	for l := range idx {
		idx[l] = int32(l * cols)
	}
	packGather16AVX512(&x[0], cols, &d[0], w, &idx[0])
	return true
}

//go:noescape
func dequantQ6KAVX2(b *byte, ds *float32, y *float32)

//go:noescape
func dequantQ4KRowAVX2(raw *byte, blocks int, y *float32, f16 *float32)

//go:noescape
func dequantQ5KRowAVX2(raw *byte, blocks int, y *float32, f16 *float32)

//go:noescape
func dequantQ8KAVX2(q *int8, d *float32, out *float32, blocks int)

// dequantQ8K is z.dequantizeFrom by the kernel: out[i] = d·q of value
// b0·256 + i.
func dequantQ8K(z *q8K, out []float32, b0 int) bool {
	nb := len(out) / 256
	if !useAVX2 || nb == 0 {
		return false
	}
	_, _ = z.q[(b0+nb)*256-1], z.d[b0+nb-1]
	dequantQ8KAVX2(&z.q[b0*256], &z.d[b0], &out[0], nb)
	return true
}

//go:noescape
func gemv4AVX512(a *float32, lda int, x *float32, k int, out *float32)

//go:noescape
func gemv8AVX512(a *float32, lda int, x *float32, k int, out *float32)

// gemv8 computes the dot products of eight rows of a (row stride lda)
// with x, reporting false (nothing done) where the kernel does not run:
// without AVX2, or when len(x) is not a multiple of 16. Eight rows
// streamed at once read a decode step's F32 weights ~20% faster than
// four (58.7 against 49.1 GB/s, six interleaved pairs of
// BenchmarkDecodeStream's matrices, AVX-512).
func gemv8(a []float32, lda int, x []float32, out *[8]float32) bool {
	k := len(x)
	if !useAVX2 || k == 0 || k%16 != 0 {
		return false
	}
	_ = a[7*lda+k-1]
	if useAVX512 {
		gemv8AVX512(&a[0], lda, &x[0], k, &out[0])
	} else {
		gemv8AVX2(&a[0], lda, &x[0], k, &out[0])
	}
	return true
}

//go:noescape
func gemv8AVX2(a *float32, lda int, x *float32, k int, out *float32)

//go:noescape
func gemv4AVX2(a *float32, lda int, x *float32, k int, out *float32)

//go:noescape
func gemm3x3AVX2(a *float32, lda int, x *float32, ldx int, k int, out *float32)

//go:noescape
func gemm4x4AVX512(a *float32, lda int, x *float32, ldx int, k int, out *float32)

//go:noescape
func axpyAVX2(dst *float32, a float32, x *float32, n int)

var useAVX512 = cpu.X86.HasAVX512F && useAVX2 && allows(levelAVX512)

// useGemmB reports whether the broadcast GEMM's kernels run here: they use
// AVX-512 with its 256-bit forms (VL) and double-word shuffles (DQ).
var useGemmB = useAVX512 && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512DQ

var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && allows(levelAVX2)

// useF16C: F16 rows are widened by F16C (VCVTPH2PS) in the kernels.
var useF16C = useAVX2 && cpu.X86.HasF16C

// kernelLevel names the kernels chosen (see Level).
func kernelLevel() string {
	switch {
	case useQ80VNNI:
		return "avx512+vnni"
	case useAVX512:
		return "avx512"
	case useAVX2:
		return "avx2"
	}
	return "generic"
}

//go:noescape
func dotF16AVX2(row *byte, x *float32, n int) float32

//go:noescape
func f16ToF32AVX2(src *byte, dst *float32, n int)

//go:noescape
func dotBF16AVX2(row *byte, x *float32, n int) float32

//go:noescape
func bf16ToF32AVX2(src *byte, dst *float32, n int)

//go:noescape
func dotQ5_0Q80AVX2(row *byte, q *int8, d *float32, blocks int, f16 *float32) float32

//go:noescape
func unpackQ5_0AVX2(row *byte, blocks int, out *byte)

//go:noescape
func unpackQ4_0AVX2(row *byte, blocks int, out *byte)

//go:noescape
func dotQ4_0Q80r4AVX2(row *byte, stride int, q *int8, d *float32, blocks int, out *float32)

// dotQ4_0Q80 is a Q4_0 row times the rounded vector whose blocks start at
// b0. With the AVX2 kernels Q4_0 rows are rewritten as Q8_0 and never come
// here (dotRowsLegacy80), so this is the Go form.
func dotQ4_0Q80(row []byte, z *q80, b0 int) float32 { return dotQ4_0Q80Go(row, z, b0) }

// dotQ5_0Q80 is a Q5_0 row times the rounded vector whose blocks start at b0.
func dotQ5_0Q80(row []byte, z *q80, b0 int) float32 {
	nb := len(row) / 22
	if !useAVX2 || nb == 0 {
		return dotQ5_0Q80Go(row, z, b0)
	}
	_ = z.q[(b0+nb)*32-1]
	return dotQ5_0Q80AVX2(&row[0], &z.q[b0*32], &z.d[b0], nb, &f16Table[0])
}

//go:noescape
func dotQ8_0Q80AVX2(row *byte, q *int8, d *float32, blocks int, f16 *float32) float32

//go:noescape
func layQ80VNNI(q *int8, d *float32, out *uint32, blocks int)

//go:noescape
func dotQ8_0Q80s4VNNI(row *byte, stride int, x *uint32, blocks int, out *float32)

//go:noescape
func sumsQ8_0VNNI(row *byte, stride int, blocks int, out *int32)

//go:noescape
func dotQ8_0Q80v8r4VNNI(row *byte, stride int, x *uint32, blocks int, corr *int32, cstride int, f16 *float32, out *float32, vstride int, lanes int, ahead int, rstride int)

//go:noescape
func quantizeQ80AVX2(x *float32, q *int8, d *float32, blocks int, back *float32)

// quantizeQ80 rounds x (a multiple of 32 values) into q and d, and with
// back (len(x) values) writes the rounded values d·q there too.
func quantizeQ80(x []float32, q []int8, d []float32, back []float32) {
	nb := len(x) / 32
	if !useF16C || nb == 0 {
		quantizeQ80Go(x, q, d, back)
		return
	}
	_, _ = q[nb*32-1], d[nb-1]
	var b *float32
	if back != nil {
		_ = back[nb*32-1]
		b = &back[0]
	}
	quantizeQ80AVX2(&x[0], &q[0], &d[0], nb, b)
}

// useQ80VNNI reports whether the Q8_0 rows multiply laid-out vectors
// (q80.lay) in the VNNI kernels here: one vector four rows at a time,
// several in groups of eight, a row's pairs of groups of four against the
// vectors' in 512-bit registers.
var useQ80VNNI = useAVX512 && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI

// layQ80 lays out one rounded vector as layQ80Go does.
func layQ80(q []int8, d []float32, out []uint32) {
	nb := len(d)
	if !useQ80VNNI || nb == 0 {
		layQ80Go(q, d, out)
		return
	}
	_, _ = q[nb*32-1], out[(nb+1)/2*48-1]
	layQ80VNNI(&q[0], &d[0], &out[0], nb)
}

// useQ80AVX2 reports whether the Q8_0 rows multiply several vectors
// (laid out by layQ80HalvesBlock) or one four rows at a time in the AVX2
// kernels here: the VNNI ones do not run, and the kernels' binary16
// widening (F16C) does.
var useQ80AVX2 = useF16C && !useQ80VNNI

// q80Halves reports whether groups of eight vectors are laid out for the
// AVX2 kernels (q80.halves).
var q80Halves = useQ80AVX2

// q80Lays reports whether products with rows of type t go through the
// Q8_0 kernels that read q80.lay (for several vectors; the VNNI ones for
// one too): Q8_0 rows, and Q4_0 and Q5_0 rows rewritten as Q8_0 a tile at
// a time.
func q80Lays(t quant.Type) bool {
	return (t == quant.Q8_0 || t == quant.Q5_0 || t == quant.Q4_0) && (useQ80VNNI || useQ80AVX2)
}

//go:noescape
func dotQ8_0Q80r4AVX2(row *byte, stride int, q *int8, d *float32, blocks int, out *float32)

//go:noescape
func dotQ8_0Q80v8AVX2(row *byte, rb int, rows int, x *byte, blocks int, f16 *float32, out *float32, ostride int, lanes int)

// dotQ8_0Q80 is a Q8_0 row times the rounded vector whose blocks start at b0.
func dotQ8_0Q80(row []byte, z *q80, b0 int) float32 {
	nb := len(row) / 34
	if !useAVX2 || nb == 0 {
		return dotQ8_0Q80Go(row, z, b0)
	}
	_ = z.q[(b0+nb)*32-1]
	return dotQ8_0Q80AVX2(&row[0], &z.q[b0*32], &z.d[b0], nb, &f16Table[0])
}

// q80LaneAhead is how far past each of its rows the Q8_0 lane kernel
// fetches into L2: its rows come from the range's four quarters, four
// sequential streams, and the next rows of each are this close. Measured
// over all of the 110M shape's Q8_0 matrices for 8 vectors (weights from
// memory, 136 MB a pass): 4.32–4.34 ms a pass at 512 bytes, 4.44–4.52 at
// 1024, 4.7–4.9 at 2–4 KB, and 4.6–4.7 with four rows side by side
// fetched 16 rows ahead, as before.
const q80LaneAhead = 512

// dotRowsQ80 is rows [lo, hi) of a Q4_0, Q5_0 or Q8_0 matrix (rows of rb
// bytes) times each of n rounded vectors of cols values: out[v*rows+r].
// With the VNNI kernels, one vector takes four rows at a time from the
// range's four quarters (the rows side by side read from memory at 28
// GB/s against 47 for one row at a time, four sequential streams at 50).
// Several take the Q8_0 matrix's tiles of sixteen rows (tiles, by
// q80Tiles) eight vectors at a time: 43 µs for 2048 rows of 768 times
// eight vectors on one thread, against 72 through the lane kernel, which
// takes them past the tiles' budget, four rows at a time from the four
// quarters, from the matrix's block corrections (sums, by blockSums).
// With the AVX2 kernels the same: one vector four rows at a time from the
// quarters, several the matrix's tiles of eight rows (dotQ8_0R8v8AVX2) or
// past the budget the matrix itself (dotQ8_0Q80v8AVX2), each result the
// VNNI kernels' bit for bit.
func dotRowsQ80(t quant.Type, data []byte, rb, lo, hi int, z *q80, n, cols int, out []float32, rows int, sums []int32, tiles []byte, scratch []float32) {
	if lo >= hi || !q80Lays(t) {
		dotRowsQ80Each(t, data, rb, lo, hi, z, n, cols, out, rows)
		return
	}
	if tiles != nil {
		if useQ80VNNI {
			r16Rows(tiles, lo, hi, z, n, cols/32, out, rows, scratch)
		} else {
			r8Rows(tiles, lo, hi, z, n, cols/32, out, rows, scratch)
		}
		return
	}
	if t != quant.Q8_0 {
		dotRowsLegacy80(t, data, rb, lo, hi, z, n, cols, out, rows, scratch)
		return
	}
	q80Rows(data, rb, lo, hi, 0, z, n, cols/32, out, rows, sums)
}

// q80Rows is rows [lo, hi) of a Q8_0 matrix times n laid-out vectors
// through the VNNI kernels: row r's results go to out[v*rows+off+r]; sums
// holds the rows' block corrections (row r's from sums[r*nb]) when n > 1.
func q80Rows(data []byte, rb, lo, hi, off int, z *q80, n, nb int, out []float32, rows int, sums []int32) {
	_ = data[hi*rb-1]
	_ = out[(n-1)*rows+off+hi-1]
	if !useQ80VNNI {
		q80RowsAVX2(data, rb, lo, hi, off, z, n, nb, out, rows)
		return
	}
	if n == 1 {
		_ = z.lay[z.layWords-1]
		var o [4]float32
		q := (hi - lo) / 4
		for i := range q {
			dotQ8_0Q80s4VNNI(&data[(lo+i)*rb], q*rb, &z.lay[0], nb, &o[0])
			for k, y := range o {
				out[off+lo+i+k*q] = y
			}
		}
		for r := lo + 4*q; r < hi; r++ { // the same row four times
			dotQ8_0Q80s4VNNI(&data[r*rb], 0, &z.lay[0], nb, &o[0])
			out[off+r] = o[0]
		}
		return
	}
	_ = z.lay[(n+7)/8*z.layWords-1]
	_ = sums[hi*nb-1]
	var o [32]float32
	q := (hi - lo) / 4
	ahead := q80LaneAhead
	for i := range q { // four rows a call, one from each quarter of the range, straight into out
		r := lo + i
		for g := 0; g < n; g += 8 {
			lanes := min(8, n-g)
			dotQ8_0Q80v8r4VNNI(&data[r*rb], q*rb, &z.lay[g/8*z.layWords], nb, &sums[r*nb], 4*nb*q, &f16Table[0], &out[g*rows+off+r], 4*rows, lanes, ahead, 4*q)
		}
	}
	for r := lo + 4*q; r < hi; r++ { // the same row four times
		for g := 0; g < n; g += 8 {
			lanes := min(8, n-g)
			dotQ8_0Q80v8r4VNNI(&data[r*rb], 0, &z.lay[g/8*z.layWords], nb, &sums[r*nb], 0, &f16Table[0], &o[0], 16, lanes, ahead, 4)
			for v := range lanes {
				out[(g+v)*rows+off+r] = o[4*v]
			}
		}
	}
}

// q80AVX2Rows is how many rows q80RowsAVX2 multiplies by every group of
// eight vectors before it moves on: they stay in L1 meanwhile.
const q80AVX2Rows = 16

// q80RowsAVX2 is q80Rows through the AVX2 kernels: one vector four rows
// at a time, from the range's four quarters (four sequential streams);
// several in groups of eight (z laid out by layQ80HalvesBlock), a few
// rows at a time by every group.
func q80RowsAVX2(data []byte, rb, lo, hi, off int, z *q80, n, nb int, out []float32, rows int) {
	if n == 1 {
		_, _ = z.q[nb*32-1], z.d[nb-1]
		var o [4]float32
		q := (hi - lo) / 4
		for i := range q {
			dotQ8_0Q80r4AVX2(&data[(lo+i)*rb], q*rb, &z.q[0], &z.d[0], nb, &o[0])
			for k, y := range o {
				out[off+lo+i+k*q] = y
			}
		}
		for r := lo + 4*q; r < hi; r++ { // the same row four times
			dotQ8_0Q80r4AVX2(&data[r*rb], 0, &z.q[0], &z.d[0], nb, &o[0])
			out[off+r] = o[0]
		}
		return
	}
	_ = z.lay[(n+7)/8*z.layWords-1]
	x := unsafe.Slice((*byte)(unsafe.Pointer(&z.lay[0])), 4*len(z.lay))
	for r0 := lo; r0 < hi; r0 += q80AVX2Rows {
		k := min(q80AVX2Rows, hi-r0)
		for g := 0; g < n; g += 8 {
			dotQ8_0Q80v8AVX2(&data[r0*rb], rb, k, &x[4*g/8*z.layWords], nb, &f16Table[0], &out[g*rows+off+r0], 4*rows, min(8, n-g))
		}
	}
}

// q50TileRows is how many Q4_0 or Q5_0 rows dotRowsLegacy80 rewrites as
// Q8_0 at a time: they and their block sums fit the scratch ScratchFloats
// gives.
const q50TileRows = 8

// dotRowsLegacy80 is dotRowsQ80 for Q4_0 and Q5_0 rows: each tile of rows
// is rewritten as Q8_0 rows (the same d, the values as int8: nibble − 8,
// or the five bits − 16) into scratch (at least ScratchFloats(cols)
// floats) and multiplied by the Q8_0 kernels, so a vector's product is
// the same bit for bit alone and in any batch, and each block's integer
// sum is the one llama.cpp's Q4_0·Q8_0 and Q5_0·Q8_0 dots make.
func dotRowsLegacy80(t quant.Type, data []byte, rb, lo, hi int, z *q80, n, cols int, out []float32, rows int, scratch []float32) {
	if t == quant.Q4_0 && n == 1 && !useQ80VNNI {
		q40RowsAVX2(data, rb, lo, hi, z, cols/32, out)
		return
	}
	unpack := unpackQ5_0AVX2
	if t == quant.Q4_0 {
		unpack = unpackQ4_0AVX2
	}
	nb := cols / 32
	rb8 := 34 * nb
	need := q50TileRows*rb8 + 4*(q50TileRows+4)*nb
	_ = scratch[(need+3)/4-1]
	_ = data[hi*rb-1]
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&scratch[0])), need)
	tile := buf[:q50TileRows*rb8]
	sums := unsafe.Slice((*int32)(unsafe.Pointer(&buf[q50TileRows*rb8])), (q50TileRows+4)*nb)
	sums, four := sums[:q50TileRows*nb], sums[q50TileRows*nb:]
	for r0 := lo; r0 < hi; r0 += q50TileRows {
		k := min(q50TileRows, hi-r0)
		unpack(&data[r0*rb], k*nb, &tile[0])
		if n > 1 && useQ80VNNI {
			blockSumsInto(tile[:k*rb8], k, nb, sums, four)
		}
		q80Rows(tile, rb8, 0, k, r0, z, n, nb, out, rows, sums)
	}
}

// q40RowsAVX2 is rows [lo, hi) of a Q4_0 matrix times one rounded vector
// at AVX2: four rows a call from the range's four quarters, as
// q80RowsAVX2 takes Q8_0 rows, each widened in registers
// (dotQ4_0Q80r4AVX2), so a decode step reads the 4.5 bits a value and
// writes nothing, and gets what the rows unpacked as Q8_0 give bit for
// bit (the path of several vectors).
func q40RowsAVX2(data []byte, rb, lo, hi int, z *q80, nb int, out []float32) {
	_, _ = z.q[nb*32-1], z.d[nb-1]
	_ = data[hi*rb-1]
	_ = out[hi-1]
	var o [4]float32
	q := (hi - lo) / 4
	for i := range q {
		dotQ4_0Q80r4AVX2(&data[(lo+i)*rb], q*rb, &z.q[0], &z.d[0], nb, &o[0])
		for k, y := range o {
			out[lo+i+k*q] = y
		}
	}
	for r := lo + 4*q; r < hi; r++ { // the same row four times
		dotQ4_0Q80r4AVX2(&data[r*rb], 0, &z.q[0], &z.d[0], nb, &o[0])
		out[r] = o[0]
	}
}

// dotF16 is the dot product of an F16 row (len(x) values) with x.
func dotF16(row []byte, x []float32) float32 {
	n := len(x) &^ 31
	if !useF16C || n == 0 {
		return dotF16Go(row, x)
	}
	_ = row[2*len(x)-1]
	return dotF16AVX2(&row[0], &x[0], n) + dotF16Go(row[2*n:], x[n:])
}

// dotBF16 is the dot product of a bfloat16 row (len(x) values) with x.
func dotBF16(row []byte, x []float32) float32 {
	n := len(x) &^ 31
	if !useAVX2 || n == 0 {
		return dotBF16Go(row, x)
	}
	_ = row[2*len(x)-1]
	return dotBF16AVX2(&row[0], &x[0], n) + dotBF16Go(row[2*n:], x[n:])
}

// f16Table is every binary16 pattern as float32, for the Q8_0 kernel's scales.
var f16Table = func() []float32 {
	t := make([]float32, 1<<16)
	for i := range t {
		t[i] = quant.F16ToF32(uint16(i))
	}
	return t
}()

// dot is the fastest available dot product of a and b[:len(a)].
func dot(a, b []float32) float32 {
	if useAVX2 {
		return dotAVX2(a, b[:len(a)])
	}
	return dotGo(a, b)
}

// decodeRowInto decodes a row of type t into out (len(out) values): the
// Q8_0 kernel where it runs, else quant.Dequantize.
func decodeRowInto(t quant.Type, raw []byte, out []float32) {
	if t == quant.Q8_0 && useAVX2 && len(out)%32 == 0 && len(out) > 0 {
		nb := len(out) / 32
		_ = raw[nb*34-1]
		dequantQ8_0AVX2(&raw[0], &out[0], nb, &f16Table[0])
		return
	}
	if t == quant.F16 && useF16C && len(out) >= 8 {
		n := len(out) &^ 7
		_ = raw[2*len(out)-1]
		f16ToF32AVX2(&raw[0], &out[0], n)
		quant.Dequantize(quant.F16, raw[2*n:], out[n:])
		return
	}
	if t == quant.BF16 && useAVX2 && len(out) >= 8 {
		n := len(out) &^ 7
		_ = raw[2*len(out)-1]
		bf16ToF32AVX2(&raw[0], &out[0], n)
		quant.Dequantize(quant.BF16, raw[2*n:], out[n:])
		return
	}
	if t == quant.Q4_K && useAVX2 && len(out)%256 == 0 && len(out) > 0 {
		nb := len(out) / 256
		_ = raw[nb*144-1]
		dequantQ4KRowAVX2(&raw[0], nb, &out[0], &f16Table[0])
		return
	}
	if t == quant.Q5_K && useAVX2 && len(out)%256 == 0 && len(out) > 0 {
		nb := len(out) / 256
		_ = raw[nb*176-1]
		dequantQ5KRowAVX2(&raw[0], nb, &out[0], &f16Table[0])
		return
	}
	if t == quant.Q6_K && useAVX2 && len(out)%256 == 0 && len(out) > 0 {
		var ds [16]float32
		for b := range len(out) / 256 {
			blk := raw[b*210 : b*210+210]
			d := half16(blk[208:])
			for i := range 16 {
				ds[i] = d * float32(int8(blk[192+i]))
			}
			dequantQ6KAVX2(&blk[0], &ds[0], &out[b*256])
		}
		return
	}
	quant.Dequantize(t, raw, out)
}

// gemv4 computes the dot products of four rows of a (row stride lda) with x.
func gemv4(a []float32, lda int, x []float32, out *[4]float32) {
	k := len(x)
	_ = a[3*lda+k-1]
	k8 := k &^ 7
	if !useAVX2 || k8 == 0 {
		gemv4Go(a, lda, x, out)
		return
	}
	if useAVX512 && k&15 == 0 { // whole cache lines a load: decode's F32 weight stream ~10% faster (BenchmarkDecodeStream)
		gemv4AVX512(&a[0], lda, &x[0], k, &out[0])
		return
	}
	gemv4AVX2(&a[0], lda, &x[0], k8, &out[0])
	for i := 0; i < 4 && k8 < k; i++ {
		out[i] += dotGo(a[i*lda+k8:i*lda+k], x[k8:])
	}
}

// gemm3x3 computes the dot products of three rows of a with three rows of
// x (strides lda, ldx), over k values: out[i*3+j] = a_i · x_j.
func gemm3x3(a []float32, lda int, x []float32, ldx, k int, out *[9]float32) {
	_ = a[2*lda+k-1]
	_ = x[2*ldx+k-1]
	k8 := k &^ 7
	if !useAVX2 || k8 == 0 {
		gemm3x3Go(a, lda, x, ldx, k, out)
		return
	}
	gemm3x3AVX2(&a[0], lda, &x[0], ldx, k8, &out[0])
	for i := 0; i < 3 && k8 < k; i++ {
		for j := 0; j < 3; j++ {
			out[i*3+j] += dotGo(a[i*lda+k8:i*lda+k], x[j*ldx+k8:j*ldx+k])
		}
	}
}

// gemm4x4 computes out[i*4+j] = a_i · x_j for four rows each of a and x
// (strides lda, ldx) over k values. Callers use it only when hasTile4.
func gemm4x4(a []float32, lda int, x []float32, ldx, k int, out *[16]float32) {
	_ = a[3*lda+k-1]
	_ = x[3*ldx+k-1]
	k16 := k &^ 15
	if !useAVX512 || k16 == 0 {
		gemm4x4Go(a, lda, x, ldx, k, out)
		return
	}
	gemm4x4AVX512(&a[0], lda, &x[0], ldx, k16, &out[0])
	for i := 0; i < 4 && k16 < k; i++ {
		for j := 0; j < 4; j++ {
			out[i*4+j] += dotGo(a[i*lda+k16:i*lda+k], x[j*ldx+k16:j*ldx+k])
		}
	}
}

// hasTile4 reports whether the 4×4 tile kernel is fast on this CPU.
var hasTile4 = useAVX512

// axpy adds a·x to dst.
func axpy(dst []float32, a float32, x []float32) {
	n := len(dst)
	x = x[:n]
	n8 := n &^ 7
	if useAVX2 && n8 > 0 {
		axpyAVX2(&dst[0], a, &x[0], n8)
	}
	for i := n8 * b2i(useAVX2); i < n; i++ {
		dst[i] += a * x[i]
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// dotRowsK writes out[r] = row r of a legacy 4-/5-bit matrix (rows of rb
// bytes in data) times x, for r in [lo, hi): the bounds checked once, the
// kernel called per row without them (decode runs ~10^5 rows a token).
func dotRowsK(t quant.Type, data []byte, rb, lo, hi int, x, xs, out []float32) {
	if lo >= hi {
		return
	}
	_ = data[hi*rb-1]
	_ = out[hi-1]
	switch {
	case useAVX2 && (t == quant.Q4_0 || t == quant.Q5_0 || t == quant.Q4_1 || t == quant.Q5_1):
		nb, kind := rb/t.BlockBytes(), legacyKind[t]
		_, _ = x[nb*32-1], xs[nb-1]
		for r := lo; r < hi; r++ {
			out[r] = dotLegacyAVX2(&data[r*rb], &x[0], &xs[0], nb, &f16Table[0], kind)
		}
	default:
		for r := lo; r < hi; r++ {
			out[r] = dotLegacy(t, data[r*rb:(r+1)*rb], x, xs)
		}
	}
}

//go:noescape
func dotLegacyAVX2(row *byte, x *float32, xs *float32, blocks int, f16 *float32, kind int) float32

// legacyKind numbers the types dotLegacyAVX2 reads.
var legacyKind = map[quant.Type]int{quant.Q4_0: 0, quant.Q5_0: 1, quant.Q4_1: 2, quant.Q5_1: 3}

// dotLegacy is a Q4_0, Q5_0, Q4_1 or Q5_1 row times x (xs: x's sums over
// 32 values).
func dotLegacy(t quant.Type, row []byte, x, xs []float32) float32 {
	nb := len(row) / t.BlockBytes()
	if useAVX2 && nb > 0 {
		_, _ = x[nb*32-1], xs[nb-1]
		return dotLegacyAVX2(&row[0], &x[0], &xs[0], nb, &f16Table[0], legacyKind[t])
	}
	return dotLegacyGo(t, row, x, xs)
}

//go:noescape
func dotQ4_KQ8AVX2(row *byte, q *int8, bs *int16, d *float32, blocks int, f16 *float32) float32

//go:noescape
func dotQ6_KQ8AVX2(row *byte, q *int8, bs *int16, d *float32, blocks int, f16 *float32) float32

//go:noescape
func dotQ5_KQ8AVX2(row *byte, q *int8, bs *int16, d *float32, blocks int, f16 *float32) float32

//go:noescape
func dotQ6_KQ8v8r4VNNI(row *byte, stride int, x *uint32, blocks int, f16 *float32, out *float32, vstride int, lanes int, ahead int, kc *int32)

//go:noescape
func prefetchL2(p *byte, n int)

//go:noescape
func dotQ4_KQ8v8r4VNNI(row *byte, stride int, x *uint32, blocks int, f16 *float32, out *float32, vstride int, lanes int, ahead int, kc *int32)

// kq8LaneKernels are the lane kernels by type.
var kq8LaneKernels = map[quant.Type]func(row *byte, stride int, x *uint32, blocks int, f16 *float32, out *float32, vstride int, lanes int, ahead int, kc *int32){
	quant.Q4_K: dotQ4_KQ8v8r4VNNI, quant.Q6_K: dotQ6_KQ8v8r4VNNI,
}

// useKQ8Lanes reports whether the lane K-quant kernels run here.
var useKQ8Lanes = useAVX512 && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI

// useKQ8AVX2 reports whether the AVX2 kernels for eight vectors at once
// take the K-quant rows instead (kq8AVX2Kernels).
var useKQ8AVX2 = useAVX2 && !useKQ8Lanes

//go:noescape
func dotQ6_KQ8v8AVX2(row *byte, rb int, rows int, q *int8, qstride int, bs *int16, bstride int, dx *float32, blocks int, f16 *float32, out *float32, ostride int, lanes int)

//go:noescape
func dotQ4_KQ8v8AVX2(row *byte, rb int, rows int, q *int8, qstride int, bs *int16, bstride int, dx *float32, blocks int, f16 *float32, out *float32, ostride int, lanes int)

// kq8AVX2Kernels are the AVX2 kernels for eight vectors by type.
var kq8AVX2Kernels = map[quant.Type]func(row *byte, rb int, rows int, q *int8, qstride int, bs *int16, bstride int, dx *float32, blocks int, f16 *float32, out *float32, ostride int, lanes int){
	quant.Q4_K: dotQ4_KQ8v8AVX2, quant.Q6_K: dotQ6_KQ8v8AVX2,
}

// kq8Lanes reports whether several vectors times rows of type t take the
// lane kernel (eight vectors a call, q8K.lay).
func kq8Lanes(t quant.Type) bool {
	if useKQ8AVX2 {
		_, ok := kq8AVX2Kernels[t]
		return ok
	}
	_, ok := kq8LaneKernels[t]
	return ok && useKQ8Lanes
}

// kq8Kernels are the int8-activation kernels by type, with their block bytes.
var kq8Kernels = map[quant.Type]struct {
	fn func(row *byte, q *int8, bs *int16, d *float32, blocks int, f16 *float32) float32
	bb int
}{quant.Q4_K: {dotQ4_KQ8AVX2, 144}, quant.Q5_K: {dotQ5_KQ8AVX2, 176}, quant.Q6_K: {dotQ6_KQ8AVX2, 210}}

// dotKQ8 is a Q4_K, Q5_K or Q6_K row times x quantized (blocks from b0).
func dotKQ8(t quant.Type, row []byte, z *q8K, b0 int) float32 {
	if !useAVX2 {
		return dotKQ8Go(t, row, z, b0)
	}
	k := kq8Kernels[t]
	nb := len(row) / k.bb
	_, _, _ = z.q[(b0+nb)*256-1], z.bs[(b0+nb)*16-1], z.d[b0+nb-1]
	return k.fn(&row[0], &z.q[b0*256], &z.bs[b0*16], &z.d[b0], nb, &f16Table[0])
}

// dotRowsKQ8 is rows [lo, hi) of a Q4_K, Q5_K or Q6_K matrix times one
// quantized x, bounds checked once.
func dotRowsKQ8(t quant.Type, data []byte, rb, lo, hi int, z *q8K, out []float32) {
	if lo >= hi {
		return
	}
	_ = data[hi*rb-1]
	_ = out[hi-1]
	if !useAVX2 {
		for r := lo; r < hi; r++ {
			out[r] = dotKQ8Go(t, data[r*rb:(r+1)*rb], z, 0)
		}
		return
	}
	k := kq8Kernels[t]
	nb := rb / k.bb
	_, _, _ = z.q[nb*256-1], z.bs[nb*16-1], z.d[nb-1]
	if t == quant.Q4_K && useF16C { // four rows a call, from the range's four quarters
		var o [4]float32
		q := (hi - lo) / 4
		for i := range q {
			dotQ4_KQ8r4AVX2(&data[(lo+i)*rb], q*rb, &z.q[0], &z.bs[0], &z.d[0], nb, &o[0])
			for k, y := range o {
				out[lo+i+k*q] = y
			}
		}
		lo += 4 * q
	}
	for r := lo; r < hi; r++ {
		out[r] = k.fn(&data[r*rb], &z.q[0], &z.bs[0], &z.d[0], nb, &f16Table[0])
	}
}

//go:noescape
func dotQ4_KQ8r4AVX2(row *byte, stride int, q *int8, bs *int16, d *float32, blocks int, out *float32)

//go:noescape
func quantizeQ8KAVX2(x *float32, q *int8, bs *int16, d *float32, blocks int)

// quantizeQ8K quantizes x (a multiple of 256 values) into z's blocks from
// block b0 on.
func quantizeQ8K(x []float32, z *q8K, b0 int) {
	nb := len(x) / 256
	if !useAVX2 || nb == 0 {
		quantizeQ8KGo(x, z, b0)
		return
	}
	_, _, _ = z.q[(b0+nb)*256-1], z.bs[(b0+nb)*16-1], z.d[b0+nb-1]
	quantizeQ8KAVX2(&x[0], &z.q[b0*256], &z.bs[b0*16], &z.d[b0], nb)
}

// dotRowsKQ8Multi is rows [lo, hi) times each of n quantized vectors (nb
// blocks each): out[t*rows+r]. A row stays in L1 while every vector
// passes over it. Through the lane kernels (z.lay laid out), sums holds
// the rows' block corrections (blockSums); tiles, the matrix in tiles
// where the AVX2 tile kernel takes it (kTiles).
func dotRowsKQ8Multi(t quant.Type, data []byte, rb, lo, hi int, z *q8K, n, nb int, out []float32, rows int, sums []int32, tiles []byte) {
	if lo >= hi {
		return
	}
	_ = data[hi*rb-1]
	_ = out[(n-1)*rows+hi-1]
	if !useAVX2 {
		for r := lo; r < hi; r++ {
			for v := range n {
				out[v*rows+r] = dotKQ8Go(t, data[r*rb:(r+1)*rb], z, v*nb)
			}
		}
		return
	}
	if tiles != nil && useKQ8AVX2 {
		kR8Rows(t, tiles, lo, hi, z, n, nb, out, rows)
		return
	}
	if kq8Lanes(t) {
		dotRowsKQ8Lanes(t, data, rb, lo, hi, z, n, nb, out, rows, sums)
		return
	}
	k := kq8Kernels[t]
	_, _, _ = z.q[n*nb*256-1], z.bs[n*nb*16-1], z.d[n*nb-1]
	for r := lo; r < hi; r++ {
		for v := range n {
			out[v*rows+r] = k.fn(&data[r*rb], &z.q[v*nb*256], &z.bs[v*nb*16], &z.d[v*nb], nb, &f16Table[0])
		}
	}
}

// dotRowsKQ8Lanes is dotRowsKQ8Multi for Q4_K and Q6_K rows through the
// lane kernels: four rows (from a multiple of four) by eight vectors a
// call (z.lay), each vector's result the one-vector kernel's bit for bit.
// sums holds the rows' block corrections (kBlockSums).
func dotRowsKQ8Lanes(t quant.Type, data []byte, rb, lo, hi int, z *q8K, n, nb int, out []float32, rows int, sums []int32) {
	if useKQ8AVX2 {
		dotRowsKQ8AVX2(t, data, rb, lo, hi, z, n, nb, out, rows)
		return
	}
	_ = z.lay[(n+7)/8*nb*laneBlockWords-1]
	_ = sums[(rows+3)/4*4*nb+3]
	k := kq8LaneKernels[t]
	ahead := 16 * rb
	prefetchL2(&data[lo*rb], min(hi-lo, 16)*rb) // the kernel fetches from 16 rows on
	for g := 0; g < n; g += 8 {
		x := &z.lay[g/8*nb*laneBlockWords]
		lanes := min(8, n-g)
		r := lo
		for ; r < hi && r%4 != 0; r++ {
			laneRow(k, data, rb, r, x, nb, out[g*rows:], rows, lanes, sums)
		}
		for ; r+4 <= hi; r += 4 { // straight into out: vector v's four rows side by side
			k(&data[r*rb], rb, x, nb, &f16Table[0], &out[g*rows+r], 4*rows, lanes, ahead, &sums[r*nb])
		}
		for ; r < hi; r++ {
			laneRow(k, data, rb, r, x, nb, out[g*rows:], rows, lanes, sums)
		}
	}
}

// kq8AVX2Rows is how many rows dotRowsKQ8AVX2 multiplies by every group
// of eight vectors before it moves on: they stay in L1 meanwhile.
const kq8AVX2Rows = 8

// dotRowsKQ8AVX2 is dotRowsKQ8Lanes through the AVX2 kernels: eight
// vectors a call, read in place (z sized for whole groups), their d laid
// out by q8K.layLanes, a few rows at a time by every group.
func dotRowsKQ8AVX2(t quant.Type, data []byte, rb, lo, hi int, z *q8K, n, nb int, out []float32, rows int) {
	k := kq8AVX2Kernels[t]
	groups := (n + 7) / 8
	q, bs := z.q[:groups*8*nb*256], z.bs[:groups*8*nb*16]
	_ = z.lay[groups*nb*8-1]
	for r0 := lo; r0 < hi; r0 += kq8AVX2Rows {
		m := min(kq8AVX2Rows, hi-r0)
		for g := range groups {
			k(&data[r0*rb], rb, m, &q[g*8*nb*256], nb*256, &bs[g*8*nb*16], nb*32, (*float32)(unsafe.Pointer(&z.lay[g*nb*8])), nb, &f16Table[0], &out[g*8*rows+r0], 4*rows, min(8, n-g*8))
		}
	}
}

// laneRow is row r times a group of vectors through the lane kernel k,
// the row four times (lane 0's correction row r's, from its place in
// sums), into out[v*rows+r].
func laneRow(k func(*byte, int, *uint32, int, *float32, *float32, int, int, int, *int32), data []byte, rb, r int, x *uint32, nb int, out []float32, rows, lanes int, sums []int32) {
	var o [32]float32
	k(&data[r*rb], 0, x, nb, &f16Table[0], &o[0], 16, lanes, 16*rb, &sums[r/4*nb*4+r%4])
	for v := range lanes {
		out[v*rows+r] = o[4*v]
	}
}

//go:noescape
func scoresAVX2(q *float32, keys *float32, kstride int, npos int, hd int, scale float32, out *float32)

//go:noescape
func valuesAVX2(acc *float32, w *float32, vals *float32, vstride int, npos int, hd int)

//go:noescape
func scoresRows8AVX2(q *float32, key *float32, kstride int, nh int, hd int, g0 int, group int, scale float32, out *float32, ostride int, scratch *float32)

//go:noescape
func valuesRowsAVX2(acc *float32, w *float32, wstride int, vals *float32, vstride int, npos int, nh int, hd int, g0 int, group int)

// hasRowKernels reports whether scoreRows8 and valueRows take heads of
// hd values here.
func hasRowKernels(hd int) bool { return useAVX2 && hd > 0 && hd%8 == 0 }

// scoreRows8 sets out[h*ostride+j] = dot(q[h*hd:][:hd], key[j*kstride+kv*hd:][:hd]) *
// scale for the nh heads of q and eight positions j, kv moving on by one
// every group heads from g0 into the first's group, each exactly as dot
// computes it; scratch holds 64·nh floats. Only where hasRowKernels(hd).
func scoreRows8(q, key []float32, kstride, nh, hd, g0, group int, scale float32, out []float32, ostride int, scratch []float32) {
	if !hasRowKernels(hd) || nh <= 0 {
		panic("scoreRows8: no kernel for these heads")
	}
	_, _ = q[nh*hd-1], key[7*kstride+((g0+nh-1)/group+1)*hd-1]
	_, _ = out[(nh-1)*ostride+7], scratch[64*nh-1]
	scoresRows8AVX2(&q[0], &key[0], kstride, nh, hd, g0, group, scale, &out[0], ostride, &scratch[0])
}

// valueRows adds w[h*wstride+j]·vals[j*vstride+kv*hd:][:hd] to
// acc[h*hd:][:hd] for the nh heads and npos positions j in order, kv as
// scoreRows8 moves it, each element exactly as axpy adds it. Only where
// hasRowKernels(hd).
func valueRows(acc, w []float32, wstride int, vals []float32, vstride, npos, nh, hd, g0, group int) {
	if !hasRowKernels(hd) || nh <= 0 {
		panic("valueRows: no kernel for these heads")
	}
	if npos <= 0 {
		return
	}
	_, _ = acc[nh*hd-1], w[(nh-1)*wstride+npos-1]
	_ = vals[(npos-1)*vstride+((g0+nh-1)/group+1)*hd-1]
	valuesRowsAVX2(&acc[0], &w[0], wstride, &vals[0], vstride, npos, nh, hd, g0, group)
}

// scoreRun sets out[j] = dot(q[:hd], keys[j*kstride:][:hd]) * scale for
// the npos keys of a run, each exactly as dot computes it; it reports
// false (nothing done) without AVX2 or when hd is not a multiple of 8.
func scoreRun(q, keys []float32, kstride, npos, hd int, scale float32, out []float32) bool {
	if !useAVX2 || npos <= 0 || hd <= 0 || hd%8 != 0 {
		return false
	}
	_, _, _ = q[hd-1], keys[(npos-1)*kstride+hd-1], out[npos-1]
	scoresAVX2(&q[0], &keys[0], kstride, npos, hd, scale, &out[0])
	return true
}

// valueRun adds w[j]·vals[j*vstride:][:hd] to acc[:hd] for the npos values
// of a run, in order, each element exactly as axpy adds it; it reports
// false (nothing done) without AVX2 or when hd is not a multiple of 8.
func valueRun(acc, w, vals []float32, vstride, npos, hd int) bool {
	if !useAVX2 || npos <= 0 || hd <= 0 || hd%8 != 0 {
		return false
	}
	_, _, _ = acc[hd-1], w[npos-1], vals[(npos-1)*vstride+hd-1]
	valuesAVX2(&acc[0], &w[0], &vals[0], vstride, npos, hd)
	return true
}

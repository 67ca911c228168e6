//go:build !purego

package cpu

import (
	"golang.org/x/sys/cpu"

	"stepthrough/engine/quant"
)

// The arm64 kernels (NEON: *_arm64.s). Every arm64 CPU has Advanced SIMD;
// the dot-product instructions (SDOT) are ARMv8.2's optional DotProd, and
// without them the int8 kernels multiply with SMULL and add with SADALP.
// Either way their integer sums are exact, so both give the Go kernels'
// results bit for bit.

// useNEON reports whether the NEON kernels run here.
var useNEON = cpu.ARM64.HasASIMD && allows(levelNEON)

// useDotProd reports whether the int8 kernels use SDOT.
var useDotProd = useNEON && cpu.ARM64.HasASIMDDP && allows(levelDotProd)

// kernelLevel names the kernels chosen (see Level).
func kernelLevel() string {
	switch {
	case useDotProd:
		return "neon+dotprod"
	case useNEON:
		return "neon"
	}
	return "generic"
}

//go:noescape
func dotNEON(a, b *float32, n int) float32

//go:noescape
func gemv4NEON(a *float32, lda int, x *float32, k int, out *float32)

//go:noescape
func gemm4x4NEON(a *float32, lda int, x *float32, ldx int, k int, out *float32)

//go:noescape
func axpyNEON(dst *float32, a float32, x *float32, n int)

//go:noescape
func dotF16NEON(row *byte, x *float32, n int) float32

//go:noescape
func f16ToF32NEON(src *byte, dst *float32, n int)

//go:noescape
func dotBF16NEON(row *byte, x *float32, n int) float32

//go:noescape
func bf16ToF32NEON(src *byte, dst *float32, n int)

//go:noescape
func dequantQ8_0NEON(row *byte, out *float32, blocks int)

//go:noescape
func scoresNEON(q *float32, keys *float32, kstride int, npos int, hd int, scale float32, out *float32)

//go:noescape
func valuesNEON(acc *float32, w *float32, vals *float32, vstride int, npos int, hd int)

// scoreRun sets out[j] = dot(q[:hd], keys[j*kstride:][:hd]) * scale for
// the npos keys of a run, each as dot computes it (a sum of -0 may come
// out +0 there); it reports false (nothing done) without NEON or when hd
// is not a multiple of 4.
func scoreRun(q, keys []float32, kstride, npos, hd int, scale float32, out []float32) bool {
	if !useNEON || npos <= 0 || hd <= 0 || hd%4 != 0 {
		return false
	}
	_, _, _ = q[hd-1], keys[(npos-1)*kstride+hd-1], out[npos-1]
	scoresNEON(&q[0], &keys[0], kstride, npos, hd, scale, &out[0])
	return true
}

// valueRun adds w[j]·vals[j*vstride:][:hd] to acc[:hd] for the npos values
// of a run, in order, each element exactly as axpy adds it; it reports
// false (nothing done) without NEON or when hd is not a multiple of 4.
func valueRun(acc, w, vals []float32, vstride, npos, hd int) bool {
	if !useNEON || npos <= 0 || hd <= 0 || hd%4 != 0 {
		return false
	}
	_, _, _ = acc[hd-1], w[npos-1], vals[(npos-1)*vstride+hd-1]
	valuesNEON(&acc[0], &w[0], &vals[0], vstride, npos, hd)
	return true
}

// dot is the dot product of a and b[:len(a)]: the kernel over whole
// fours, Go over the rest.
func dot(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	n4 := n &^ 3
	if !useNEON || n4 == 0 {
		return dotGo(a, b)
	}
	return dotNEON(&a[0], &b[0], n4) + dotGo(a[n4:], b[n4:])
}

// gemv4 computes the dot products of four rows of a (row stride lda) with
// x, each as dot computes it.
func gemv4(a []float32, lda int, x []float32, out *[4]float32) {
	k := len(x)
	_ = a[3*lda+k-1]
	k4 := k &^ 3
	if !useNEON || k4 == 0 {
		gemv4Go(a, lda, x, out)
		return
	}
	gemv4NEON(&a[0], lda, &x[0], k4, &out[0])
	for i := 0; i < 4 && k4 < k; i++ {
		out[i] += dotGo(a[i*lda+k4:i*lda+k], x[k4:])
	}
}

// hasTile4 reports whether the 4×4 tile kernel runs: NEON's 32 registers
// hold its sixteen accumulators and eight operands.
var hasTile4 = useNEON

// gemm4x4 computes out[i*4+j] = a_i · x_j for four rows each of a and x
// (strides lda, ldx) over k values.
func gemm4x4(a []float32, lda int, x []float32, ldx, k int, out *[16]float32) {
	_ = a[3*lda+k-1]
	_ = x[3*ldx+k-1]
	k4 := k &^ 3
	if !useNEON || k4 == 0 {
		gemm4x4Go(a, lda, x, ldx, k, out)
		return
	}
	gemm4x4NEON(&a[0], lda, &x[0], ldx, k4, &out[0])
	for i := 0; i < 4 && k4 < k; i++ {
		for j := 0; j < 4; j++ {
			out[i*4+j] += dotGo(a[i*lda+k4:i*lda+k], x[j*ldx+k4:j*ldx+k])
		}
	}
}

// axpy adds a·x to dst.
func axpy(dst []float32, a float32, x []float32) {
	n := len(dst)
	x = x[:n]
	n4 := n &^ 3
	if !useNEON || n4 == 0 {
		axpyGo(dst, a, x)
		return
	}
	axpyNEON(&dst[0], a, &x[0], n4)
	axpyGo(dst[n4:], a, x[n4:])
}

// dotF16 is the dot product of an F16 row (len(x) values) with x.
func dotF16(row []byte, x []float32) float32 {
	n4 := len(x) &^ 3
	if !useNEON || n4 == 0 {
		return dotF16Go(row, x)
	}
	_ = row[2*len(x)-1]
	return dotF16NEON(&row[0], &x[0], n4) + dotF16Go(row[2*n4:], x[n4:])
}

// dotBF16 is the dot product of a bfloat16 row (len(x) values) with x.
func dotBF16(row []byte, x []float32) float32 {
	n16 := len(x) &^ 15
	if !useNEON || n16 == 0 {
		return dotBF16Go(row, x)
	}
	_ = row[2*len(x)-1]
	return dotBF16NEON(&row[0], &x[0], n16) + dotBF16Go(row[2*n16:], x[n16:])
}

// decodeRowInto decodes a row of type t into out (len(out) values): F16,
// BF16 and Q8_0 rows by the kernels, bit for bit quant.Dequantize's values,
// the others by quant.Dequantize.
func decodeRowInto(t quant.Type, raw []byte, out []float32) {
	switch n := len(out); {
	case !useNEON:
	case t == quant.F16 && n >= 8:
		n8 := n &^ 7
		_ = raw[2*n-1]
		f16ToF32NEON(&raw[0], &out[0], n8)
		quant.Dequantize(quant.F16, raw[2*n8:], out[n8:])
		return
	case t == quant.BF16 && n >= 8:
		n8 := n &^ 7
		_ = raw[2*n-1]
		bf16ToF32NEON(&raw[0], &out[0], n8)
		quant.Dequantize(quant.BF16, raw[2*n8:], out[n8:])
		return
	case t == quant.Q8_0 && n > 0 && n%32 == 0:
		_ = raw[n/32*34-1]
		dequantQ8_0NEON(&raw[0], &out[0], n/32)
		return
	}
	quant.Dequantize(t, raw, out)
}

// hasRowKernels reports false: no kernels read whole cached rows here
// (heads takes each head over blocks of positions).
func hasRowKernels(hd int) bool { return false }

// scoreRows8 is never called here (hasRowKernels).
func scoreRows8(q, key []float32, kstride, nh, hd, g0, group int, scale float32, out []float32, ostride int, scratch []float32) {
	panic("scoreRows8: no kernel here")
}

// valueRows is never called here (hasRowKernels).
func valueRows(acc, w []float32, wstride int, vals []float32, vstride, npos, nh, hd, g0, group int) {
	panic("valueRows: no kernel here")
}

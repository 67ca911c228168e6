//go:build (!amd64 && !arm64) || purego

// The portable kernels where no assembly replaces them: off amd64 and
// arm64, and under the purego tag (dot_other.go holds the ones no arm64
// kernel replaces either).

package cpu

import "stepthrough/engine/quant"

func dot(a, b []float32) float32 { return dotGo(a, b) }

func dotF16(row []byte, x []float32) float32 { return dotF16Go(row, x) }

func dotBF16(row []byte, x []float32) float32 { return dotBF16Go(row, x) }

func gemv4(a []float32, lda int, x []float32, out *[4]float32) { gemv4Go(a, lda, x, out) }

var hasTile4 = false

func gemm4x4(a []float32, lda int, x []float32, ldx, k int, out *[16]float32) {
	gemm4x4Go(a, lda, x, ldx, k, out)
}

func axpy(dst []float32, a float32, x []float32) { axpyGo(dst, a, x) }

// decodeRowInto decodes a row of type t into out.
func decodeRowInto(t quant.Type, raw []byte, out []float32) { quant.Dequantize(t, raw, out) }

// kernelLevel names the kernels chosen (see Level): the portable ones.
func kernelLevel() string { return "generic" }

// scoreRun has no kernel here.
func scoreRun(q, keys []float32, kstride, npos, hd int, scale float32, out []float32) bool {
	return false
}

// valueRun has no kernel here.
func valueRun(acc, w, vals []float32, vstride, npos, hd int) bool {
	return false
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

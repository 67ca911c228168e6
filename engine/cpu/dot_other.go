//go:build !amd64 || purego

package cpu

import (
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

func dot(a, b []float32) float32 { return dotGo(a, b) }

func dotF16(row []byte, x []float32) float32 { return dotF16Go(row, x) }

func gemv4(a []float32, lda int, x []float32, out *[4]float32) { gemv4Go(a, lda, x, out) }

func gemm3x3(a []float32, lda int, x []float32, ldx, k int, out *[9]float32) {
	gemm3x3Go(a, lda, x, ldx, k, out)
}

var hasTile4 = false

func gemm4x4(a []float32, lda int, x []float32, ldx, k int, out *[16]float32) {
	gemm4x4Go(a, lda, x, ldx, k, out)
}

func axpy(dst []float32, a float32, x []float32) { axpyGo(dst, a, x) }

func dotRowsK(t quant.Type, data []byte, rb, lo, hi int, x, xs, out []float32) {
	for r := lo; r < hi; r++ {
		out[r] = dotLegacy(t, data[r*rb:(r+1)*rb], x, xs)
	}
}

func dotLegacy(t quant.Type, row []byte, x, xs []float32) float32 { return dotLegacyGo(t, row, x, xs) }

// dotKQ8 is a Q4_K, Q5_K or Q6_K row times x quantized (blocks from b0).
func dotKQ8(t quant.Type, row []byte, z *q8K, b0 int) float32 { return dotKQ8Go(t, row, z, b0) }

// dotRowsKQ8 is rows [lo, hi) of such a matrix times one quantized x.
func dotRowsKQ8(t quant.Type, data []byte, rb, lo, hi int, z *q8K, out []float32) {
	for r := lo; r < hi; r++ {
		out[r] = dotKQ8Go(t, data[r*rb:(r+1)*rb], z, 0)
	}
}

// quantizeQ8K quantizes x (a multiple of 256 values) into z's blocks.
func quantizeQ8K(x []float32, z *q8K, b0 int) { quantizeQ8KGo(x, z, b0) }

// useKQ8Lanes, useKQ8AVX2: the lane K-quant kernels are amd64's.
const (
	useKQ8Lanes = false
	useKQ8AVX2  = false
)

// kq8Lanes: the lane kernels are amd64's.
func kq8Lanes(quant.Type) bool { return false }

// dotRowsKQ8Multi is rows [lo, hi) times each of n quantized vectors.
func dotRowsKQ8Multi(t quant.Type, data []byte, rb, lo, hi int, z *q8K, n, nb int, out []float32, rows int, _ []int32, _ []byte) {
	for r := lo; r < hi; r++ {
		for v := range n {
			out[v*rows+r] = dotKQ8Go(t, data[r*rb:(r+1)*rb], z, v*nb)
		}
	}
}

// decodeRowInto decodes a row of type t into out.
func decodeRowInto(t quant.Type, raw []byte, out []float32) { quant.Dequantize(t, raw, out) }

// packVectors has no kernel here: the caller packs in Go.
func packVectors(x []float32, cols int, d []float32, w int) bool { return false }

// packGroup is the vectors packVectors would take at a time.
const packGroup = 16

// dequantQ8K has no kernel here: the caller decodes in Go.
func dequantQ8K(z *q8K, out []float32, b0 int) bool { return false }

// gemv8 has no kernel here.
func gemv8(a []float32, lda int, x []float32, out *[8]float32) bool { return false }

func dotQ5_0Q80(row []byte, z *q80, b0 int) float32 { return dotQ5_0Q80Go(row, z, b0) }

func dotQ8_0Q80(row []byte, z *q80, b0 int) float32 { return dotQ8_0Q80Go(row, z, b0) }

func quantizeQ80(x []float32, q []int8, d []float32, back []float32) { quantizeQ80Go(x, q, d, back) }

func layQ80(q []int8, d []float32, out []uint32) { layQ80Go(q, d, out) }

// q80Lays is false: no kernel here reads q80.lay.
func q80Lays(t quant.Type) bool { return false }

// useQ80VNNI and q80Halves: the kernels that read q80.lay are amd64's.
const (
	useQ80VNNI = false
	q80Halves  = false
)

// blockSums and q80BlockSums are never needed here: no kernel reads them.
func blockSums(*model.Tensor) []int32 { return nil }

// q80Tiles and kTiles are never needed here: no kernel reads tiles.
func q80Tiles(*model.Tensor) []byte { return nil }

func kTiles(*model.Tensor) []byte { return nil }

func q80BlockSums([]byte, int, int) []int32 { return nil }

// kernelLevel names the kernels chosen (see Level): the portable ones.
func kernelLevel() string { return "generic" }

func dotRowsQ80(t quant.Type, data []byte, rb, lo, hi int, z *q80, n, cols int, out []float32, rows int, _ []int32, _ []byte, _ []float32) {
	dotRowsQ80Each(t, data, rb, lo, hi, z, n, cols, out, rows)
}

// dotHeads has no kernel here.
func dotHeads(q, key []float32, nh, hd, g0, group int, scale float32, out []float32, ostride int) bool {
	return false
}

// axpyHeads has no kernel here.
func axpyHeads(acc, w []float32, wstride int, val []float32, nh, hd, g0, group int) bool {
	return false
}

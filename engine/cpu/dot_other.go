//go:build !amd64 || purego

package cpu

import (
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

func gemm3x3(a []float32, lda int, x []float32, ldx, k int, out *[9]float32) {
	gemm3x3Go(a, lda, x, ldx, k, out)
}

// useKQ8Lanes, useKQ8AVX2: the lane K-quant kernels are amd64's.
const (
	useKQ8Lanes = false
	useKQ8AVX2  = false
)

// kq8Lanes: the lane kernels are amd64's.
func kq8Lanes(quant.Type) bool { return false }

// packVectors has no kernel here: the caller packs in Go.
func packVectors(x []float32, cols int, d []float32, w int) bool { return false }

// packGroup is the vectors packVectors would take at a time.
const packGroup = 16

// dequantQ8K has no kernel here: the caller decodes in Go.
func dequantQ8K(z *q8K, out []float32, b0 int) bool { return false }

// gemv8 has no kernel here.
func gemv8(a []float32, lda int, x []float32, out *[8]float32) bool { return false }

func layQ80(q []int8, d []float32, out []uint32) { layQ80Go(q, d, out) }

// q80Lays is false: no kernel here reads q80.lay.
func q80Lays(t quant.Type) bool { return false }

// blockSums and q80BlockSums are never needed here: no kernel reads them.
func blockSums(*model.Tensor) []int32 { return nil }

// q80Tiles and kTiles are never needed here: no kernel reads tiles.
func q80Tiles(*model.Tensor) []byte { return nil }

func kTiles(*model.Tensor) []byte { return nil }

// useQ80VNNI and q80Halves: the kernels that read q80.lay are amd64's.
const (
	useQ80VNNI = false
	q80Halves  = false
)

func q80BlockSums([]byte, int, int) []int32 { return nil }

func dotRowsQ80(t quant.Type, data []byte, rb, lo, hi int, z *q80, n, cols int, out []float32, rows int, _ []int32, _ []byte, _ []float32) {
	dotRowsQ80Each(t, data, rb, lo, hi, z, n, cols, out, rows)
}

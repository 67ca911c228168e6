//go:build (!amd64 && !arm64) || purego

// The portable int8 and legacy-type kernels where no assembly replaces
// them: off amd64 and arm64, and under the purego tag.

package cpu

import "stepthrough/engine/quant"

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

// dotRowsKQ8Multi is rows [lo, hi) times each of n quantized vectors.
func dotRowsKQ8Multi(t quant.Type, data []byte, rb, lo, hi int, z *q8K, n, nb int, out []float32, rows int, _ []int32, _ []byte) {
	for r := lo; r < hi; r++ {
		for v := range n {
			out[v*rows+r] = dotKQ8Go(t, data[r*rb:(r+1)*rb], z, v*nb)
		}
	}
}

func dotQ4_0Q80(row []byte, z *q80, b0 int) float32 { return dotQ4_0Q80Go(row, z, b0) }

func dotQ5_0Q80(row []byte, z *q80, b0 int) float32 { return dotQ5_0Q80Go(row, z, b0) }

func dotQ8_0Q80(row []byte, z *q80, b0 int) float32 { return dotQ8_0Q80Go(row, z, b0) }

func quantizeQ80(x []float32, q []int8, d []float32, back []float32) { quantizeQ80Go(x, q, d, back) }

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"stepthrough/engine/quant"
)

// The K-quant dot products equal decoding the row and dotting it (within
// float32 rounding), for the Go kernels and the fastest available ones.
func TestDotKQuants(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const cols = 1024
	w := make([]float32, cols)
	x := make([]float32, cols)
	for i := range w {
		w[i], x[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
	}
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q6_K} {
		row, err := quant.Quantize(typ, w)
		if err != nil {
			t.Fatal(err)
		}
		dec := make([]float32, cols)
		if err := quant.Dequantize(typ, row, dec); err != nil {
			t.Fatal(err)
		}
		var want float64
		var scale float64
		for i := range dec {
			want += float64(dec[i]) * float64(x[i])
			scale += math.Abs(float64(dec[i]) * float64(x[i]))
		}
		g := map[quant.Type]int{quant.Q4_K: 32, quant.Q6_K: 16}[typ]
		xs := make([]float32, cols/g)
		xSums(x, g, xs)
		got := map[string]float32{}
		switch typ {
		case quant.Q4_K:
			got["go"], got["fast"] = dotQ4_KGo(row, x, xs), dotQ4_K(row, x, xs)
		case quant.Q6_K:
			got["go"], got["fast"] = dotQ6_KGo(row, x, xs), dotQ6_K(row, x, xs)
		}
		for k, v := range got {
			if math.Abs(float64(v)-want) > 1e-5*scale {
				t.Errorf("%s %s kernel: %g, decoded row %g", typ, k, v, want)
			}
		}
	}
}

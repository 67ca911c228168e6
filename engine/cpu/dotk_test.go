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

// The legacy 4- and 5-bit dot products (offsets and mins through x's
// sums) equal decoding the row and dotting it, on quantized rows and on
// random bytes.
func TestDotLegacy(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const cols = 512
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	xs := make([]float32, cols/32)
	xSums(x, 32, xs)
	for _, typ := range []quant.Type{quant.Q4_0, quant.Q5_0, quant.Q4_1, quant.Q5_1} {
		for _, random := range []bool{false, true} {
			w := make([]float32, cols)
			for i := range w {
				w[i] = float32(r.NormFloat64())
			}
			row, _ := quant.Quantize(typ, w)
			if random {
				for i := range row {
					row[i] = byte(r.IntN(256))
				}
				for b := 0; b < len(row); b += typ.BlockBytes() { // finite, small scales
					row[b], row[b+1] = byte(r.IntN(256)), 0x2c
					if typ == quant.Q4_1 || typ == quant.Q5_1 {
						row[b+2], row[b+3] = byte(r.IntN(256)), 0xac
					}
				}
			}
			dec := make([]float32, cols)
			quant.Dequantize(typ, row, dec)
			var want, scale float64
			for i := range dec {
				want += float64(dec[i]) * float64(x[i])
				scale += math.Abs(float64(dec[i]) * float64(x[i]))
			}
			for name, got := range map[string]float32{"go": dotLegacyGo(typ, row, x, xs), "fast": dotLegacy(typ, row, x, xs)} {
				if math.Abs(float64(got)-want) > 1e-5*scale+1e-6 {
					t.Errorf("%s (random bytes %v) %s kernel: %g, decoded row %g", typ, random, name, got, want)
				}
			}
		}
	}
}

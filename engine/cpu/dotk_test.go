package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"stepthrough/engine/quant"
)

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

// The int8-activation K-quant products: the assembly equals the Go
// reference (the same integer sums), on quantized rows and on random
// bytes (every scale, min and high bit pattern), and both are within x's
// 8-bit rounding of the float product of the decoded row.
func TestDotKQ8(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const cols = 1024
	w := make([]float32, cols)
	x := make([]float32, 2*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	for i := range x {
		x[i] = float32(r.NormFloat64()) * float32(1+i%7)
	}
	var z q8K
	z.resize(2, cols)
	quantizeQ8K(x, &z, 0)
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K} {
		quantized, err := quant.Quantize(typ, w)
		if err != nil {
			t.Fatal(err)
		}
		random := make([]byte, len(quantized))
		for i := range random {
			random[i] = byte(r.Uint32())
		}
		for i := 0; i < len(random); i += typ.BlockBytes() { // finite block scales
			if typ != quant.Q6_K {
				random[i+1], random[i+3] = random[i+1]&0x3b, random[i+3]&0x3b
			} else {
				random[i+209] &= 0x3b
			}
		}
		for name, row := range map[string][]byte{"quantized": quantized, "random": random} {
			dec := make([]float32, cols)
			quant.Dequantize(typ, row, dec)
			for v := range 2 { // the second vector: blocks from 4 on
				var want, scale float64
				for i := range dec {
					want += float64(dec[i]) * float64(x[v*cols+i])
					scale += math.Abs(float64(dec[i]) * float64(x[v*cols+i]))
				}
				ref := dotKQ8Go(typ, row, &z, v*cols/256)
				fast := dotKQ8(typ, row, &z, v*cols/256)
				if math.Abs(float64(fast-ref)) > 1e-5*math.Abs(float64(ref))+1e-3 {
					t.Errorf("%s %s vector %d: assembly %g, Go %g", typ, name, v, fast, ref)
				}
				if math.Abs(float64(ref)-want) > 0.01*scale {
					t.Errorf("%s %s vector %d: int8 product %g, float %g (scale %g)", typ, name, v, ref, want, scale)
				}
			}
		}
	}
}

// The assembly quantizer writes exactly what the Go one writes: scales,
// int8 values (ties to even) and sums over 16, for ordinary, tiny, huge
// and all-zero blocks.
func TestQuantizeQ8K(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 5*256)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for i := 256; i < 512; i++ {
		x[i] *= 1e-30
	}
	for i := 512; i < 768; i++ {
		x[i] *= 1e30
	}
	clear(x[768:1024])
	x[1024], x[1025] = 127, -63.5 // exact ties after scaling
	var a, b q8K
	a.resize(1, len(x))
	b.resize(1, len(x))
	quantizeQ8K(x, &a, 0)
	quantizeQ8KGo(x, &b, 0)
	for i := range a.q {
		if a.q[i] != b.q[i] {
			t.Fatalf("q[%d] = %d, Go %d (x %g, d %g)", i, a.q[i], b.q[i], x[i], b.d[i/256])
		}
	}
	for i := range a.bs {
		if a.bs[i] != b.bs[i] {
			t.Fatalf("bs[%d] = %d, Go %d", i, a.bs[i], b.bs[i])
		}
	}
	for i := range a.d {
		if a.d[i] != b.d[i] {
			t.Fatalf("d[%d] = %g, Go %g", i, a.d[i], b.d[i])
		}
	}
}

// dequantize writes d·q for every value of z (for tests).
func (z *q8K) dequantize(out []float32) { z.dequantizeFrom(out[:len(z.q)], 0) }

package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// refDecode decodes one block from the ggml block layouts as written in
// ggml's documentation, element by element with generic bit reads and
// float64 arithmetic: a decoder independent of dequant.go's.
func refDecode(t Type, b []byte) []float64 {
	h := func(off int) float64 { return float64(F16ToF32(binary.LittleEndian.Uint16(b[off:]))) }
	nib := func(base, i int) int { // nibble i of the bytes at base: low nibbles of the first half, high of the second
		return int(b[base+i%16] >> (4 * (i / 16)) & 15)
	}
	bit := func(word uint32, i int) int { return int(word >> i & 1) }
	out := make([]float64, t.BlockElems())
	switch t {
	case Q4_1:
		for i := range 32 {
			out[i] = h(0)*float64(nib(4, i)) + h(2)
		}
	case Q5_0:
		qh := binary.LittleEndian.Uint32(b[2:])
		for i := range 32 {
			out[i] = h(0) * float64(nib(6, i)|bit(qh, i)<<4-16)
		}
	case Q5_1:
		qh := binary.LittleEndian.Uint32(b[4:])
		for i := range 32 {
			out[i] = h(0)*float64(nib(8, i)|bit(qh, i)<<4) + h(2)
		}
	case Q4_K, Q5_K:
		// 8 sub-blocks of 32; 6-bit scale and min of sub-block j: j < 4 in
		// the low 6 bits of bytes j and j+4; j >= 4 split between byte j+4
		// (low 4 bits: scale, high 4: min) and the top 2 bits of bytes j-4
		// and j
		s := b[4:16]
		for i := range 256 {
			j, l := i/32, i%32
			var sc, mn int
			if j < 4 {
				sc, mn = int(s[j]&63), int(s[j+4]&63)
			} else {
				sc, mn = int(s[j+4]&15)|int(s[j-4]>>6)<<4, int(s[j+4]>>4)|int(s[j]>>6)<<4
			}
			qs := b[16:]
			if t == Q5_K {
				qs = b[48:]
			}
			q := int(qs[32*(j/2)+l] >> (4 * (j % 2)) & 15) // pairs of sub-blocks share 32 bytes
			if t == Q5_K {
				q |= int(b[16+l]>>j&1) << 4
			}
			out[i] = h(0)*float64(sc)*float64(q) - h(2)*float64(mn)
		}
	case Q6_K:
		// 256 values in two halves of 128; in a half, value e = 32g + l
		// has its low 4 bits in ql[l + 32(g%2)] (high nibble when g >= 2)
		// and its top 2 bits in qh[l] at bit 2g; scales are per 16 values
		for i := range 256 {
			n, e := i/128, i%128
			g, l := e/32, e%32
			lo := int(b[64*n+l+32*(g%2)]>>(4*(g/2))) & 15
			hi := int(b[128+32*n+l]>>(2*g)) & 3
			out[i] = h(208) * float64(int8(b[192+i/16])) * float64(lo|hi<<4-32)
		}
	}
	return out
}

func nmse(x []float32, y []float64) float64 {
	var num, den float64
	for i := range x {
		d := float64(x[i]) - y[i]
		num += d * d
		den += float64(x[i]) * float64(x[i])
	}
	return num / den
}

// Every encoder writes blocks that an independent decoder reads back as
// dequant.go does, within each type's error bound, on Gaussian, uniform
// and outlier-laden data.
func TestEncodersMatchAnIndependentDecoder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	data := map[string][]float32{"gaussian": make([]float32, 4096), "uniform": make([]float32, 4096), "outliers": make([]float32, 4096), "zeros": make([]float32, 4096)}
	for i := range 4096 {
		data["gaussian"][i] = float32(r.NormFloat64())
		data["uniform"][i] = float32(2*r.Float64() - 1)
		data["outliers"][i] = float32(r.NormFloat64() * 0.02)
		if i%97 == 0 {
			data["outliers"][i] = float32(r.NormFloat64() * 2)
		}
	}
	bounds := map[Type]float64{Q8_0: 3e-4, Q6_K: 1.5e-3, Q5_0: 4e-3, Q5_1: 4e-3, Q5_K: 4e-3, Q4_0: 1.5e-2, Q4_1: 1.5e-2, Q4_K: 1.5e-2}
	for typ, bound := range bounds {
		for name, x := range data {
			b, err := Quantize(typ, x)
			if err != nil {
				t.Fatal(err)
			}
			y := make([]float32, len(x))
			if err := Dequantize(typ, b, y); err != nil {
				t.Fatal(err)
			}
			if typ != Q8_0 && typ != Q4_0 { // those two have reference decoders of their own in TestDequantizeHandBlocks
				be, bb := typ.BlockElems(), typ.BlockBytes()
				for blk := 0; blk < len(x)/be; blk++ {
					ref := refDecode(typ, b[blk*bb:(blk+1)*bb])
					for i, v := range ref {
						if got := float64(y[blk*be+i]); math.Abs(got-v) > 1e-5*(1+math.Abs(v)) {
							t.Fatalf("%s %s block %d element %d: dequant %g, independent decoder %g", typ, name, blk, i, got, v)
						}
					}
				}
			}
			y64 := make([]float64, len(y))
			for i, v := range y {
				y64[i] = float64(v)
			}
			if name == "zeros" {
				for i, v := range y {
					if v != 0 {
						t.Fatalf("%s: zeros decode to %g at %d", typ, v, i)
					}
				}
				continue
			}
			if e := nmse(x, y64); e > bound || math.IsNaN(e) {
				t.Errorf("%s on %s data: NMSE %.2e, bound %.0e", typ, name, e, bound)
			} else {
				t.Logf("%s on %s data: NMSE %.2e", typ, name, e)
			}
		}
	}
}

package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

func TestF16RoundTripAllPatterns(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := F16ToF32(h)
		if f != f { // NaN
			if g := F32ToF16(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, g)
			}
			continue
		}
		if g := F32ToF16(f); g != h {
			t.Fatalf("F32ToF16(F16ToF32(%#04x)=%g) = %#04x", h, f, g)
		}
	}
}

func TestF16Rounding(t *testing.T) {
	tests := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff},
		{65520, 0x7c00},                  // rounds up to infinity
		{1 + 1.0/2048, 0x3c00},           // halfway, ties to even (down)
		{1 + 3.0/2048, 0x3c02},           // halfway, ties to even (up)
		{5.960464477539063e-08, 0x0001},  // smallest subnormal
		{2.9802322387695312e-08, 0x0000}, // half of it: ties to even -> 0
		{float32(math.Inf(-1)), 0xfc00},
	}
	for _, tt := range tests {
		if got := F32ToF16(tt.in); got != tt.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
}

func TestBF16(t *testing.T) {
	if got := F32ToBF16(1.00390625); got != 0x3f80 { // halfway to even
		t.Errorf("F32ToBF16(1.00390625) = %#04x, want 0x3f80", got)
	}
	if got := BF16ToF32(0x4049); got != 3.140625 {
		t.Errorf("BF16ToF32(0x4049) = %g", got)
	}
}

func randVec(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func TestQuantizeRoundTrip(t *testing.T) {
	x := randVec(256*4, 7)
	for _, tt := range []struct {
		typ    Type
		maxErr float64 // relative to the block's largest magnitude
	}{{F32, 0}, {F16, 1e-3}, {BF16, 8e-3}, {Q8_0, 1.0 / 127}, {Q4_0, 1.0 / 8}} {
		b, err := Quantize(tt.typ, x)
		if err != nil {
			t.Fatal(err)
		}
		y := make([]float32, len(x))
		if err := Dequantize(tt.typ, b, y); err != nil {
			t.Fatal(err)
		}
		for blk := 0; blk < len(x)/32; blk++ {
			var amax float64
			for _, v := range x[blk*32 : blk*32+32] {
				amax = max(amax, math.Abs(float64(v)))
			}
			for i := blk * 32; i < blk*32+32; i++ {
				if e := math.Abs(float64(x[i] - y[i])); e > tt.maxErr*amax*1.01+1e-7 {
					t.Fatalf("%s: element %d: %g -> %g (error %g, block max %g)", tt.typ, i, x[i], y[i], e, amax)
				}
			}
		}
	}
}

func TestQuantizeRejects(t *testing.T) {
	if _, err := Quantize(Q8_0, make([]float32, 33)); err == nil {
		t.Error("Q8_0 of 33 elements: want error")
	}
	if _, err := Quantize(Q4_K, make([]float32, 255)); err == nil {
		t.Error("Q4_K of 255 elements: want error")
	}
	if err := Dequantize(Q8_0, make([]byte, 33), make([]float32, 32)); err == nil {
		t.Error("short Q8_0 input: want error")
	}
	if err := Dequantize(Type(99), nil, nil); err == nil {
		t.Error("unknown type: want error")
	}
}

// Hand-built blocks with values worked out from the ggml layouts.
func TestDequantizeHandBlocks(t *testing.T) {
	put16 := func(b []byte, f float32) { binary.LittleEndian.PutUint16(b, F32ToF16(f)) }
	check := func(name string, typ Type, blk []byte, want map[int]float32) {
		t.Helper()
		y := make([]float32, typ.BlockElems())
		if err := Dequantize(typ, blk, y); err != nil {
			t.Fatal(err)
		}
		for i, w := range want {
			if y[i] != w {
				t.Errorf("%s: y[%d] = %g, want %g", name, i, y[i], w)
			}
		}
	}

	q40 := make([]byte, 18)
	put16(q40, 0.5)
	q40[2] = 0x3f // low nibble 15 -> element 0, high nibble 3 -> element 16
	check("Q4_0", Q4_0, q40, map[int]float32{0: (15 - 8) * 0.5, 16: (3 - 8) * 0.5, 1: -4})

	q41 := make([]byte, 20)
	put16(q41, 2)
	put16(q41[2:], -1)
	q41[4+5] = 0xa1
	check("Q4_1", Q4_1, q41, map[int]float32{5: 1*2 - 1, 21: 10*2 - 1, 0: -1})

	q50 := make([]byte, 22)
	put16(q50, 1)
	binary.LittleEndian.PutUint32(q50[2:], 1<<3|1<<(12+4+4)) // 5th bit of element 3 and element 20
	q50[6+3] = 0x02
	q50[6+4] = 0x70
	check("Q5_0", Q5_0, q50, map[int]float32{3: (2 | 16) - 16, 20: (7 | 16) - 16, 0: -16})

	q51 := make([]byte, 24)
	put16(q51, 1)
	put16(q51[2:], 0.5)
	binary.LittleEndian.PutUint32(q51[4:], 1<<31)
	q51[8+15] = 0xf0
	check("Q5_1", Q5_1, q51, map[int]float32{31: 31.5, 15: 0.5})

	q80 := make([]byte, 34)
	put16(q80, 0.25)
	q80[2+7] = byte(0x80) // -128
	check("Q8_0", Q8_0, q80, map[int]float32{7: -32, 0: 0})

	// Q4_K: sub-block 0 has scale 2 / min 1; sub-block 5 uses the packed
	// high bits: scale = (q[9]&0xf)|(q[1]>>6)<<4, min = (q[9]>>4)|(q[5]>>6)<<4.
	q4k := make([]byte, 144)
	put16(q4k, 0.5)         // d
	put16(q4k[2:], 0.25)    // dmin
	q4k[4+0] = 2            // scale 0
	q4k[4+4] = 1            // min 0
	q4k[4+1] = 1 << 6       // high bits of scale 5 -> 16
	q4k[4+5] = 2 << 6       // high bits of min 5 -> 32
	q4k[4+9] = 0x3<<4 | 0x1 // scale 5 low = 1, min 5 low = 3
	q4k[16+0] = 0x09        // element 0 low nibble 9
	q4k[16+64+1] = 0x70     // chunk 2 (elements 128..191), element 128+32+1 high nibble 7
	check("Q4_K", Q4_K, q4k, map[int]float32{
		0:   0.5*2*9 - 0.25*1,
		161: 0.5*17*7 - 0.25*35,
	})

	q5k := make([]byte, 176)
	put16(q5k, 1)
	put16(q5k[2:], 1)
	q5k[4+2] = 3        // scale 2 (chunk 1 low half)
	q5k[4+6] = 1        // min 2
	q5k[16+4] = 1 << 2  // qh bit u1 of chunk 1 for l=4
	q5k[48+32+4] = 0x05 // chunk 1 low nibble for l=4
	check("Q5_K", Q5_K, q5k, map[int]float32{64 + 4: 3*(5+16) - 1})

	q6k := make([]byte, 210)
	put16(q6k[208:], 0.5)
	q6k[192+0] = 2          // scale for l<16 of y[0..31]
	q6k[192+6] = byte(0xfd) // -3: scale for y[96+l], l<16
	q6k[0] = 0x3a           // ql[0]: low 0xa (y[0]), high 0x3 (y[64])
	q6k[32] = 0x50          // ql[32]: high 5 -> y[96]
	q6k[128] = 0x2<<6 | 0x1 // qh[0]: bits 0-1 =1 -> y[0]; bits 6-7 =2 -> y[96]
	check("Q6_K", Q6_K, q6k, map[int]float32{
		0:  0.5 * 2 * float32(0xa|1<<4-32),
		96: 0.5 * -3 * float32(0x5|2<<4-32),
	})
}

package cpu

import (
	"math"

	"stepthrough/engine/quant"
)

// q80 is x rounded to Q8_0 blocks for the Q5_0 int8 kernel, as llama.cpp
// rounds a vector it multiplies with Q5_0 rows (its AVX2
// quantize_row_q8_0): per 32 values, d = max|x|/127 kept as binary16, and
// q = x·127/max rounded half to even. Q5_0 is what llama.cpp's Q4_K_M
// writes for matrices whose rows are not a multiple of 256.
type q80 struct {
	q []int8
	d []float32 // each block's scale, binary16 widened
}

func (z *q80) resize(n, cols int) {
	if cap(z.q) < n*cols {
		z.q, z.d = make([]int8, n*cols), make([]float32, n*cols/32)
	}
	z.q, z.d = z.q[:n*cols], z.d[:n*cols/32]
}

// q80Task rounds vectors [lo, hi) of x into z on the pool's workers
// (and, with back, writes them back as floats).
type q80Task struct {
	z       *q80
	x, back []float32
	cols    int
}

func (t *q80Task) Run(_, lo, hi int) {
	a, b := lo*t.cols, hi*t.cols
	t.z.quantizeRange(t.x[a:b], a)
	if t.back != nil {
		t.z.dequantizeRange(t.back[a:b], a)
	}
}

// hasQ80Kernel reports whether a matrix multiplies x rounded to Q8_0
// (q80): Q5_0, on every platform (off amd64 dotQ5_0Q80 is Go), so every
// build computes llama.cpp's numbers.
func hasQ80Kernel(t quant.Type, cols int) bool { return t == quant.Q5_0 && cols%32 == 0 }

// quantize rounds x (a multiple of 32 values) into z.
func (z *q80) quantize(x []float32) { z.quantizeRange(x, 0) }

// quantizeRange rounds x into z from value off (a multiple of 32) on.
func (z *q80) quantizeRange(x []float32, off int) {
	q, d := z.q[off:], z.d[off/32:]
	for b := range len(x) / 32 {
		blk := x[b*32 : b*32+32]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		id := float32(0)
		if amax != 0 {
			id = 127 / amax
		}
		d[b] = quant.F16ToF32(quant.F32ToF16(amax / 127))
		for i, v := range blk {
			q[b*32+i] = int8(math.RoundToEven(float64(v * id)))
		}
	}
}

// dequantize writes the rounded values, d·q, into out.
func (z *q80) dequantize(out []float32) { z.dequantizeRange(out, 0) }

// dequantizeRange writes values [off, off+len(out)) back as floats.
func (z *q80) dequantizeRange(out []float32, off int) {
	for i := range out {
		out[i] = z.d[(off+i)/32] * float32(z.q[off+i])
	}
}

// dotQ5_0Q80Go is a Q5_0 row times one rounded vector (its blocks from
// b0): Σ_blocks d_w·d_x·Σ q_w·q_x, the integer sums exact.
func dotQ5_0Q80Go(row []byte, z *q80, b0 int) float32 {
	var s float32
	for b := range len(row) / 22 {
		blk := row[b*22 : b*22+22]
		qh := uint32(blk[2]) | uint32(blk[3])<<8 | uint32(blk[4])<<16 | uint32(blk[5])<<24
		var sum int32
		for j := range 16 {
			lo := int32(blk[6+j]&15) | int32(qh>>j&1)<<4
			hi := int32(blk[6+j]>>4) | int32(qh>>(j+16)&1)<<4
			sum += (lo-16)*int32(z.q[(b0+b)*32+j]) + (hi-16)*int32(z.q[(b0+b)*32+16+j])
		}
		s += half16(blk[0:]) * z.d[b0+b] * float32(sum)
	}
	return s
}

package quant

import (
	"encoding/binary"
	"math"
)

// Encoders for the other block types, in ggml's block layouts (each the
// exact inverse of its decoder in dequant.go). The choice of scales
// follows ggml's reference encoders in spirit (a block's range mapped onto
// its levels, the K-quants' sub-block scales themselves quantized to 6 or
// 8 bits against the super-block's); ggml's search for the scale that
// minimises the error is not reproduced, so errors are a little larger.

func nearest(x float32) int { return int(math.Round(float64(x))) }

func clampInt(v, lo, hi int) int { return max(lo, min(hi, v)) }

// minMax is a block's smallest and largest value.
func minMax(x []float32) (lo, hi float32) {
	lo, hi = x[0], x[0]
	for _, v := range x[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	return
}

// quantQ4_1Block: x ≈ d·q + m, q in 0..15.
func quantQ4_1Block(x []float32, b []byte) {
	lo, hi := minMax(x)
	d := (hi - lo) / 15
	id := float32(0)
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(b, F32ToF16(d))
	binary.LittleEndian.PutUint16(b[2:], F32ToF16(lo))
	for j := 0; j < 16; j++ {
		q0 := clampInt(nearest((x[j]-lo)*id), 0, 15)
		q1 := clampInt(nearest((x[j+16]-lo)*id), 0, 15)
		b[4+j] = byte(q0) | byte(q1)<<4
	}
}

// quantQ5_0Block follows ggml's reference: d = max/-16 (max the value of
// largest magnitude), q = min(31, int(x/d + 16.5)); the fifth bits go in
// a 32-bit mask.
func quantQ5_0Block(x []float32, b []byte) {
	var amax, mx float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, mx = a, v
		}
	}
	d := mx / -16
	id := float32(0)
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(b, F32ToF16(d))
	var qh uint32
	for j := 0; j < 16; j++ {
		q0 := min(31, int(float32(x[j]*id)+16.5)) // rounded before the add, on arm64 too (quantQ4_0Block)
		q1 := min(31, int(float32(x[j+16]*id)+16.5))
		b[6+j] = byte(q0&0x0f) | byte(q1&0x0f)<<4
		qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
	}
	binary.LittleEndian.PutUint32(b[2:], qh)
}

// quantQ5_1Block: x ≈ d·q + m, q in 0..31.
func quantQ5_1Block(x []float32, b []byte) {
	lo, hi := minMax(x)
	d := (hi - lo) / 31
	id := float32(0)
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(b, F32ToF16(d))
	binary.LittleEndian.PutUint16(b[2:], F32ToF16(lo))
	var qh uint32
	for j := 0; j < 16; j++ {
		q0 := clampInt(nearest((x[j]-lo)*id), 0, 31)
		q1 := clampInt(nearest((x[j+16]-lo)*id), 0, 31)
		b[8+j] = byte(q0&0x0f) | byte(q1&0x0f)<<4
		qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
	}
	binary.LittleEndian.PutUint32(b[4:], qh)
}

// kScales chooses a Q4_K/Q5_K super-block's 8 sub-block scales and mins
// (x ≈ d·sc·q − dmin·m, q in 0..levels) and returns them quantized to 6
// bits with the super-block's d and dmin.
func kScales(x []float32, levels float32) (d, dmin float32, sc, mn [8]int) {
	var scale, off [8]float32
	var maxScale, maxOff float32
	for j := range 8 {
		lo, hi := minMax(x[32*j : 32*j+32])
		lo = min(lo, 0) // the offset only moves values up, as in ggml
		scale[j], off[j] = (hi-lo)/levels, -lo
		maxScale, maxOff = max(maxScale, scale[j]), max(maxOff, off[j])
	}
	d, dmin = maxScale/63, maxOff/63
	for j := range 8 {
		if d > 0 {
			sc[j] = clampInt(nearest(scale[j]/d), 0, 63)
		}
		if dmin > 0 {
			mn[j] = clampInt(nearest(off[j]/dmin), 0, 63)
		}
	}
	// the decoder sees the half-precision d and dmin
	d, dmin = F16ToF32(F32ToF16(d)), F16ToF32(F32ToF16(dmin))
	return
}

// packScalesK4 writes 8 six-bit scales and mins in the 12 bytes that
// scaleMinK4 reads.
func packScalesK4(q []byte, sc, mn [8]int) {
	for j := 0; j < 4; j++ {
		q[j] = byte(sc[j]) | byte(sc[j+4]>>4)<<6
		q[j+4] = byte(mn[j]) | byte(mn[j+4]>>4)<<6
		q[j+8] = byte(sc[j+4]&0x0f) | byte(mn[j+4]&0x0f)<<4
	}
}

// kLevel is element value v's level in sub-block j.
func kLevel(v, d, dmin float32, sc, mn int, levels int) int {
	dl := d * float32(sc)
	if dl == 0 {
		return 0
	}
	return clampInt(nearest((v+dmin*float32(mn))/dl), 0, levels)
}

func quantQ4_KBlock(x []float32, b []byte) {
	d, dmin, sc, mn := kScales(x, 15)
	binary.LittleEndian.PutUint16(b, F32ToF16(d))
	binary.LittleEndian.PutUint16(b[2:], F32ToF16(dmin))
	packScalesK4(b[4:16], sc, mn)
	q := b[16:144]
	for p := 0; p < 4; p++ { // pairs of sub-blocks share 32 bytes: low nibbles, then high
		j := 2 * p
		for l := 0; l < 32; l++ {
			lo := kLevel(x[32*j+l], d, dmin, sc[j], mn[j], 15)
			hi := kLevel(x[32*(j+1)+l], d, dmin, sc[j+1], mn[j+1], 15)
			q[32*p+l] = byte(lo) | byte(hi)<<4
		}
	}
}

func quantQ5_KBlock(x []float32, b []byte) {
	d, dmin, sc, mn := kScales(x, 31)
	binary.LittleEndian.PutUint16(b, F32ToF16(d))
	binary.LittleEndian.PutUint16(b[2:], F32ToF16(dmin))
	packScalesK4(b[4:16], sc, mn)
	qh, ql := b[16:48], b[48:176]
	clear(qh)
	for p := 0; p < 4; p++ {
		j := 2 * p
		for l := 0; l < 32; l++ {
			lo := kLevel(x[32*j+l], d, dmin, sc[j], mn[j], 31)
			hi := kLevel(x[32*(j+1)+l], d, dmin, sc[j+1], mn[j+1], 31)
			ql[32*p+l] = byte(lo&0x0f) | byte(hi&0x0f)<<4
			qh[l] |= byte(lo>>4&1)<<(2*p) | byte(hi>>4&1)<<(2*p+1)
		}
	}
}

// quantQ6_KBlock: 16 sub-blocks of 16 values, each with an 8-bit signed
// scale against the super-block's d (ggml's reference: the sub-block's
// scale is max/-32, the largest scale maps to -128).
func quantQ6_KBlock(x []float32, b []byte) {
	var scales [16]float32
	var maxScale, amaxScale float32
	for ib := range 16 {
		var amax, mx float32
		for _, v := range x[16*ib : 16*ib+16] {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax, mx = a, v
			}
		}
		scales[ib] = mx / -32
		if a := float32(math.Abs(float64(scales[ib]))); a > amaxScale {
			amaxScale, maxScale = a, scales[ib]
		}
	}
	ql, qh, sc := b[0:128], b[128:192], b[192:208]
	clear(b[:210])
	if amaxScale == 0 {
		return
	}
	iscale := -128 / maxScale
	d := F16ToF32(F32ToF16(1 / iscale))
	binary.LittleEndian.PutUint16(b[208:], F32ToF16(1/iscale))
	var level [256]int
	for ib := range 16 {
		s := clampInt(nearest(iscale*scales[ib]), -128, 127)
		sc[ib] = byte(int8(s))
		dl := d * float32(s)
		for i := 16 * ib; i < 16*ib+16; i++ {
			if dl != 0 {
				level[i] = clampInt(nearest(x[i]/dl), -32, 31) + 32
			} else {
				level[i] = 32
			}
		}
	}
	for n := 0; n < 2; n++ { // halves of 128: four groups of 32 interleaved
		L := level[128*n:]
		for l := 0; l < 32; l++ {
			q1, q2, q3, q4 := L[l], L[l+32], L[l+64], L[l+96]
			ql[64*n+l] = byte(q1&0x0f) | byte(q3&0x0f)<<4
			ql[64*n+l+32] = byte(q2&0x0f) | byte(q4&0x0f)<<4
			qh[32*n+l] = byte(q1>>4) | byte(q2>>4)<<2 | byte(q3>>4)<<4 | byte(q4>>4)<<6
		}
	}
}

package quant

import (
	"encoding/binary"
	"fmt"
	"math"
)

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

func half(b []byte) float32 { return f16Table[binary.LittleEndian.Uint16(b)] }

// Dequantize decodes len(dst) elements of type t from src. src must hold
// exactly the bytes of those elements and len(dst) must be a whole number
// of blocks.
func Dequantize(t Type, src []byte, dst []float32) error {
	n, err := t.RowBytes(len(dst))
	if err != nil {
		return err
	}
	if len(src) != n {
		return fmt.Errorf("dequantize %s: %d elements need %d bytes, got %d", t, len(dst), n, len(src))
	}
	switch t {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = f16Table[le16(src[2*i:])]
		}
	case BF16:
		for i := range dst {
			dst[i] = BF16ToF32(le16(src[2*i:]))
		}
	case Q4_0:
		forBlocks(src, dst, 18, 32, dequantQ4_0)
	case Q4_1:
		forBlocks(src, dst, 20, 32, dequantQ4_1)
	case Q5_0:
		forBlocks(src, dst, 22, 32, dequantQ5_0)
	case Q5_1:
		forBlocks(src, dst, 24, 32, dequantQ5_1)
	case Q8_0:
		forBlocks(src, dst, 34, 32, DequantQ8_0Block)
	case Q4_K:
		forBlocks(src, dst, 144, 256, dequantQ4_K)
	case Q5_K:
		forBlocks(src, dst, 176, 256, dequantQ5_K)
	case Q6_K:
		forBlocks(src, dst, 210, 256, dequantQ6_K)
	default:
		return fmt.Errorf("dequantize: unsupported type %s", t)
	}
	return nil
}

func forBlocks(src []byte, dst []float32, bb, be int, f func(b []byte, y []float32)) {
	for i := 0; i*be < len(dst); i++ {
		f(src[i*bb:(i+1)*bb], dst[i*be:(i+1)*be])
	}
}

// DequantQ8_0Block decodes one 34-byte Q8_0 block: y[j] = qs[j]*d.
func DequantQ8_0Block(b []byte, y []float32) {
	d := half(b)
	for j := 0; j < 32; j++ {
		y[j] = float32(int8(b[2+j])) * d
	}
}

// Q4_0: low nibbles are the first 16 elements, high nibbles the last 16.
func dequantQ4_0(b []byte, y []float32) {
	d := half(b)
	qs := b[2:18]
	for j := 0; j < 16; j++ {
		y[j] = float32(int(qs[j]&0x0f)-8) * d
		y[j+16] = float32(int(qs[j]>>4)-8) * d
	}
}

func dequantQ4_1(b []byte, y []float32) {
	d, m := half(b), half(b[2:])
	qs := b[4:20]
	for j := 0; j < 16; j++ {
		y[j] = float32(qs[j]&0x0f)*d + m
		y[j+16] = float32(qs[j]>>4)*d + m
	}
}

func dequantQ5_0(b []byte, y []float32) {
	d := half(b)
	qh := binary.LittleEndian.Uint32(b[2:])
	qs := b[6:22]
	for j := 0; j < 16; j++ {
		xh0 := byte((qh>>uint(j))<<4) & 0x10
		xh1 := byte(qh>>uint(j+12)) & 0x10
		y[j] = float32(int(qs[j]&0x0f|xh0)-16) * d
		y[j+16] = float32(int(qs[j]>>4|xh1)-16) * d
	}
}

func dequantQ5_1(b []byte, y []float32) {
	d, m := half(b), half(b[2:])
	qh := binary.LittleEndian.Uint32(b[4:])
	qs := b[8:24]
	for j := 0; j < 16; j++ {
		xh0 := byte((qh>>uint(j))<<4) & 0x10
		xh1 := byte(qh>>uint(j+12)) & 0x10
		y[j] = float32(qs[j]&0x0f|xh0)*d + m
		y[j+16] = float32(qs[j]>>4|xh1)*d + m
	}
}

// scaleMinK4 unpacks the j-th 6-bit scale and min of a Q4_K/Q5_K block.
func scaleMinK4(j int, q []byte) (sc, m byte) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0x0f | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

func dequantQ4_K(b []byte, y []float32) {
	d, dmin := half(b), half(b[2:])
	scales := b[4:16]
	q := b[16:144]
	for is := 0; is < 8; is += 2 {
		sc, m := scaleMinK4(is, scales)
		d1, m1 := d*float32(sc), dmin*float32(m)
		sc, m = scaleMinK4(is+1, scales)
		d2, m2 := d*float32(sc), dmin*float32(m)
		for l := 0; l < 32; l++ {
			y[l] = d1*float32(q[l]&0x0f) - m1
			y[32+l] = d2*float32(q[l]>>4) - m2
		}
		q = q[32:]
		y = y[64:]
	}
}

func dequantQ5_K(b []byte, y []float32) {
	d, dmin := half(b), half(b[2:])
	scales := b[4:16]
	qh := b[16:48]
	ql := b[48:176]
	u1, u2 := byte(1), byte(2)
	for is := 0; is < 8; is += 2 {
		sc, m := scaleMinK4(is, scales)
		d1, m1 := d*float32(sc), dmin*float32(m)
		sc, m = scaleMinK4(is+1, scales)
		d2, m2 := d*float32(sc), dmin*float32(m)
		for l := 0; l < 32; l++ {
			h1, h2 := float32(0), float32(0)
			if qh[l]&u1 != 0 {
				h1 = 16
			}
			if qh[l]&u2 != 0 {
				h2 = 16
			}
			y[l] = d1*(float32(ql[l]&0x0f)+h1) - m1
			y[32+l] = d2*(float32(ql[l]>>4)+h2) - m2
		}
		ql = ql[32:]
		y = y[64:]
		u1 <<= 2
		u2 <<= 2
	}
}

func dequantQ6_K(b []byte, y []float32) {
	ql := b[0:128]
	qh := b[128:192]
	sc := b[192:208]
	d := half(b[208:])
	for n := 0; n < 2; n++ {
		for l := 0; l < 32; l++ {
			is := l / 16
			q1 := int(ql[l]&0x0f|((qh[l]>>0)&3)<<4) - 32
			q2 := int(ql[l+32]&0x0f|((qh[l]>>2)&3)<<4) - 32
			q3 := int(ql[l]>>4|((qh[l]>>4)&3)<<4) - 32
			q4 := int(ql[l+32]>>4|((qh[l]>>6)&3)<<4) - 32
			y[l] = d * float32(int8(sc[is+0])) * float32(q1)
			y[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
			y[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
			y[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
		}
		ql = ql[64:]
		qh = qh[32:]
		sc = sc[8:]
		y = y[128:]
	}
}

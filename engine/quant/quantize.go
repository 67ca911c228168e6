package quant

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Quantize encodes src as type t and returns the bytes. len(src) must be a
// whole number of blocks. Supported targets: F32, F16, BF16, Q8_0, Q4_0.
func Quantize(t Type, src []float32) ([]byte, error) {
	n, err := t.RowBytes(len(src))
	if err != nil {
		return nil, err
	}
	out := make([]byte, n)
	switch t {
	case F32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
	case F16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(out[2*i:], F32ToF16(v))
		}
	case BF16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(out[2*i:], F32ToBF16(v))
		}
	case Q8_0:
		for i := 0; i*32 < len(src); i++ {
			quantQ8_0Block(src[i*32:i*32+32], out[i*34:i*34+34])
		}
	case Q4_0:
		for i := 0; i*32 < len(src); i++ {
			quantQ4_0Block(src[i*32:i*32+32], out[i*18:i*18+18])
		}
	default:
		return nil, fmt.Errorf("quantize: no encoder for %s (supported: F32, F16, BF16, Q8_0, Q4_0)", t)
	}
	return out, nil
}

// quantQ8_0Block follows ggml's reference: d = amax/127, q = round(x/d).
func quantQ8_0Block(x []float32, b []byte) {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	d := amax / 127
	id := float32(0)
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(b, F32ToF16(d))
	for j, v := range x {
		b[2+j] = byte(int8(math.Round(float64(v * id))))
	}
}

// quantQ4_0Block follows ggml's reference: d = max/-8 where max is the
// value of largest magnitude, q = min(15, int(x/d + 8.5)).
func quantQ4_0Block(x []float32, b []byte) {
	var amax, mx float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax, mx = a, v
		}
	}
	d := mx / -8
	id := float32(0)
	if d != 0 {
		id = 1 / d
	}
	binary.LittleEndian.PutUint16(b, F32ToF16(d))
	for j := 0; j < 16; j++ {
		x0 := min(15, int8(x[j]*id+8.5))
		x1 := min(15, int8(x[j+16]*id+8.5))
		b[2+j] = byte(x0) | byte(x1)<<4
	}
}

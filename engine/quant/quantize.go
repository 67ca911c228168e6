package quant

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Quantize encodes src as type t and returns the bytes. len(src) must be a
// whole number of blocks. Every type the engine loads can be written.
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
	default:
		enc, ok := encoders[t]
		if !ok {
			return nil, fmt.Errorf("quantize: no encoder for %s", t)
		}
		be, bb := t.BlockElems(), t.BlockBytes()
		for i := 0; i*be < len(src); i++ {
			enc(src[i*be:(i+1)*be], out[i*bb:(i+1)*bb])
		}
	}
	return out, nil
}

// encoders encode one block of each block type.
var encoders = map[Type]func(x []float32, b []byte){
	Q8_0: quantQ8_0Block, Q4_0: quantQ4_0Block, Q4_1: quantQ4_1Block, Q5_0: quantQ5_0Block, Q5_1: quantQ5_1Block,
	Q4_K: quantQ4_KBlock, Q5_K: quantQ5_KBlock, Q6_K: quantQ6_KBlock,
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
		// float32(…) rounds the product before the add, as ggml's
		// reference does: arm64 would otherwise fuse the two (FMADD)
		// and now and then write another nibble than amd64 does
		x0 := min(15, int8(float32(x[j]*id)+8.5))
		x1 := min(15, int8(float32(x[j+16]*id)+8.5))
		b[2+j] = byte(x0) | byte(x1)<<4
	}
}

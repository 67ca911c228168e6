package cpu

import (
	"math"
	"unsafe"

	"stepthrough/engine/quant"
)

// dotRef is the reference dot product: the specification every fast dot
// kernel is tested against.
func dotRef(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// dotGo is the portable dot product: eight independent accumulators.
func dotGo(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
		s4 += a[i+4] * b[i+4]
		s5 += a[i+5] * b[i+5]
		s6 += a[i+6] * b[i+6]
		s7 += a[i+7] * b[i+7]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// f32s views little-endian float32 bytes as floats without copying.
func f32s(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

var hostLittleEndian = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

func gemv4Go(a []float32, lda int, x []float32, out *[4]float32) {
	k := len(x)
	for i := 0; i < 4; i++ {
		out[i] = dotGo(a[i*lda:i*lda+k], x)
	}
}

func gemm3x3Go(a []float32, lda int, x []float32, ldx, k int, out *[9]float32) {
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			out[i*3+j] = dotGo(a[i*lda:i*lda+k], x[j*ldx:j*ldx+k])
		}
	}
}

func gemm4x4Go(a []float32, lda int, x []float32, ldx, k int, out *[16]float32) {
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			out[i*4+j] = dotGo(a[i*lda:i*lda+k], x[j*ldx:j*ldx+k])
		}
	}
}

func axpyGo(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += a * x[i]
	}
}

// dotBF16Go is the dot product of a bfloat16 row (len(x) values) with x:
// each value is its 16 bits above 16 zero bits.
func dotBF16Go(row []byte, x []float32) float32 {
	var s float32
	row = row[:2*len(x)]
	for i, v := range x {
		s += math.Float32frombits((uint32(row[2*i])|uint32(row[2*i+1])<<8)<<16) * v
	}
	return s
}

// dotF16Go is the dot product of an F16 row (len(x) values) with x.
func dotF16Go(row []byte, x []float32) float32 {
	var s float32
	for i, v := range x {
		s += quant.F16ToF32(uint16(row[2*i])|uint16(row[2*i+1])<<8) * v
	}
	return s
}

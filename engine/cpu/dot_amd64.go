package cpu

import (
	"golang.org/x/sys/cpu"

	"stepthrough/engine/quant"
)

//go:noescape
func dotAVX2(a, b []float32) float32

//go:noescape
func dotQ8_0AVX2(row *byte, x *float32, blocks int, f16 *float32) float32

var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// f16Table is every binary16 pattern as float32, for the Q8_0 kernel's scales.
var f16Table = func() []float32 {
	t := make([]float32, 1<<16)
	for i := range t {
		t[i] = quant.F16ToF32(uint16(i))
	}
	return t
}()

// dot is the fastest available dot product of a and b[:len(a)].
func dot(a, b []float32) float32 {
	if useAVX2 {
		return dotAVX2(a, b[:len(a)])
	}
	return dotGo(a, b)
}

// dotQ8_0 is the dot product of a Q8_0 row with x.
func dotQ8_0(row []byte, x []float32) float32 {
	nb := len(row) / 34
	if useAVX2 && nb > 0 {
		_ = x[nb*32-1]
		return dotQ8_0AVX2(&row[0], &x[0], nb, &f16Table[0])
	}
	return dotQ8_0Go(row, x)
}

package views

import (
	"math"
	"testing"
)

// Half precision round-trips every half exactly and rounds a float to the
// nearest half: within half a unit in the last place, ties to even.
func TestHalf(t *testing.T) {
	for h := range uint32(1 << 16) {
		f := fromHalf(uint16(h))
		if math.IsNaN(float64(f)) {
			if !math.IsNaN(float64(fromHalf(toHalf(f)))) {
				t.Fatalf("NaN %#x lost", h)
			}
			continue
		}
		if g := toHalf(f); g != uint16(h) && !(f == 0 && g&0x7fff == 0) {
			t.Fatalf("%#x → %g → %#x", h, f, g)
		}
	}
	for _, tc := range []struct {
		f    float32
		want float32
	}{{1, 1}, {-2.5, -2.5}, {0.1, 0.0999755859375}, {65504, 65504}, {1e6, float32(math.Inf(1))}, {1e-9, 0}, {1.0009765625 + 0.00048828125, 1.0009765625 + 0.0009765625}} {
		if got := fromHalf(toHalf(tc.f)); got != tc.want {
			t.Errorf("%g → %g, want %g", tc.f, got, tc.want)
		}
	}
	for _, f := range []float32{0.0123456, -3.14159, 123.456, 6.1e-5} {
		if got := fromHalf(toHalf(f)); math.Abs(float64(got-f)) > math.Abs(float64(f))*0.0005+6e-8 {
			t.Errorf("%g → %g: more than half a unit off", f, got)
		}
	}
}

// fromHalf is the float a half-precision value stands for (the page
// decodes it the same way in JavaScript).
func fromHalf(h uint16) float32 {
	sign := float32(1)
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, mant := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * float32(math.Ldexp(mant, -24))
	case 31:
		if mant != 0 {
			return float32(math.NaN())
		}
		return sign * float32(math.Inf(1))
	}
	return sign * float32(math.Ldexp(1+mant/1024, exp-15))
}

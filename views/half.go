package views

import (
	"encoding/base64"
	"encoding/binary"
	"math"
)

// halfValues writes a vector for a strip's canvas as base64 of IEEE
// half-precision floats, little-endian: about three significant digits
// (what the hover shows) in under three characters a value, where decimal
// text took seven.
func halfValues(v []float32) string {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], toHalf(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// toHalf rounds f to the nearest half-precision float (ties to even);
// beyond its range it saturates to ±Inf, NaN stays NaN.
func toHalf(f float32) uint16 {
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int(bits>>23&0xff) - 127 + 15
	mant := bits & 0x7fffff
	switch {
	case bits&0x7fffffff > 0x7f800000: // NaN
		return sign | 0x7e00
	case exp >= 31: // too large (or Inf)
		return sign | 0x7c00
	case exp <= 0: // subnormal half, or zero
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		h := mant >> shift
		rem, half := mant&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent: still the right rounding
	}
	return sign | uint16(h)
}

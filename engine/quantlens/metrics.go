package quantlens

import "math"

// RelErrCos is ‖b−a‖/‖a‖ and the cosine similarity of a and b. Equal
// rows give exactly 0 and 1; a zero reference row gives a relative error
// of 0 when b is zero too and +Inf otherwise, and a zero row a cosine of
// 0 unless both are zero.
func RelErrCos(a, b []float32) (rel, cos float64) {
	var aa, bb, ab, dd float64
	for i, x := range a {
		y := float64(b[i])
		d := y - float64(x)
		aa += float64(x) * float64(x)
		bb += y * y
		ab += float64(x) * y
		dd += d * d
	}
	switch {
	case dd == 0:
		return 0, 1
	case aa == 0:
		return math.Inf(1), 0
	case bb == 0:
		return 1, 0
	}
	return math.Sqrt(dd / aa), max(-1, min(1, ab/math.Sqrt(aa*bb)))
}

// JSBits is the Jensen–Shannon divergence of two distributions in bits
// (0 for equal ones, at most 1): the mean KL of each from their average.
func JSBits(p, q []float32) float64 {
	var js float64
	for i, x := range p {
		a, b := float64(x), float64(q[i])
		m := (a + b) / 2
		if a > 0 {
			js += a * math.Log2(a/m) / 2
		}
		if b > 0 {
			js += b * math.Log2(b/m) / 2
		}
	}
	return max(0, js)
}

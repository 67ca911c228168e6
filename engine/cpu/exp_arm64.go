//go:build !purego

package cpu

// expConsts are the constants of expf and GELU as the kernels load them
// (exp_arm64.s): expLo, expHi, log2 e, ln 2 high and low, the six
// coefficients, 1; then GELU's 0.044715, √(2/π) and −2.
var expConsts = [16]float32{
	expLo, expHi, expLog2e, expLn2Hi,
	expLn2Lo, expP0, expP1, expP2,
	expP3, expP4, expP5, 1,
	0.044715, 0.7978845608028654, -2, 0,
}

//go:noescape
func maxNEON(x *float32, n int) float32

//go:noescape
func scaleNEON(x *float32, n int, s float32)

//go:noescape
func expSubNEON(x *float32, n int, s, m float32, c *float32) float32

//go:noescape
func siluMulNEON(a, b *float32, n int, c *float32)

//go:noescape
func geluNEON(a *float32, n int, c *float32)

// maxf is the largest value of x (−Inf when empty; NaN if one is).
func maxf(x []float32) float32 {
	n4 := len(x) &^ 3
	if !useNEON || n4 == 0 {
		return maxGo(x)
	}
	return max(maxNEON(&x[0], n4), maxGo(x[n4:]))
}

// expSub sets x[i] = e^(x[i]·s − m) and returns their sum, added in
// order: every value and the sum are expSubGo's bit for bit.
func expSub(x []float32, s, m float32) float32 {
	n4 := len(x) &^ 3
	if !useNEON || n4 == 0 {
		return expSubGo(x, s, m)
	}
	sum := expSubNEON(&x[0], n4, s, m, &expConsts[0])
	for i := n4; i < len(x); i++ { // the sum goes on from the kernel's
		x[i] = expf(float32(float64(x[i])*float64(s) - float64(m)))
		sum += x[i]
	}
	return sum
}

// scale multiplies x by s.
func scale(x []float32, s float32) {
	n4 := len(x) &^ 3
	if useNEON && n4 > 0 {
		scaleNEON(&x[0], n4, s)
	} else {
		n4 = 0
	}
	scaleGo(x[n4:], s)
}

// siluMul sets a[i] = SiLU(a[i])·b[i].
func siluMul(a, b []float32) {
	b = b[:len(a)]
	n4 := len(a) &^ 3
	if useNEON && n4 > 0 {
		siluMulNEON(&a[0], &b[0], n4, &expConsts[0])
	} else {
		n4 = 0
	}
	siluMulGo(a[n4:], b[n4:])
}

// gelu sets a[i] = GELU(a[i]).
func gelu(a []float32) {
	n4 := len(a) &^ 3
	if useNEON && n4 > 0 {
		geluNEON(&a[0], n4, &expConsts[0])
	} else {
		n4 = 0
	}
	geluGo(a[n4:])
}

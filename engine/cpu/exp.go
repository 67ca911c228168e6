package cpu

import "math"

// The exponential the activations and softmax use: float32, by Cody and
// Waite's range reduction (x = n·ln2 + r, |r| ≤ ln2/2, ln2 split in two so
// n·ln2 is exact) and a degree-5 polynomial for e^r − 1 − r, then 2^n put
// into the exponent bits. Its error is within 2 ulp of the float64 exp
// rounded to float32 (TestExpf). The AVX2 kernels compute the same steps
// on eight values at once; expf is their reference and their tail.

const (
	expLog2e = 1.44269504088896341
	expLn2Hi = 0.693359375     // ln 2 rounded to 9 bits: n·expLn2Hi is exact
	expLn2Lo = -2.12194440e-4  // ln 2 − expLn2Hi
	expLo    = -87.33654       // below it, e^x underflows float32's normal range: 0
	expHi    = 88.0            // above it, clamped (2^127 stays finite)
	expP0    = 1.9875691500e-4 // the polynomial's coefficients, highest first
	expP1    = 1.3981999507e-3 //
	expP2    = 8.3334519073e-3 //
	expP3    = 4.1665795894e-2 //
	expP4    = 1.6666665459e-1 //
	expP5    = 5.0000001201e-1 //
)

// expf is e^x in float32 (0 below expLo, including −Inf).
func expf(x float32) float32 {
	if !(x >= expLo) { // also NaN
		if x != x {
			return x
		}
		return 0
	}
	x = min(x, expHi)
	n := float32(math.RoundToEven(float64(x * expLog2e)))
	r := x - n*expLn2Hi
	r -= n * expLn2Lo
	p := float32(expP0)
	p = p*r + expP1
	p = p*r + expP2
	p = p*r + expP3
	p = p*r + expP4
	p = p*r + expP5
	y := (p*r)*r + r // the kernels' order: one FMA there
	y += 1
	return y * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// Softmax normalises x in place: exp(x − max) / sum. −Inf entries become 0.
func Softmax(x []float32) { softmaxScaled(x, 1) }

// softmaxScaled is Softmax of x·s for s > 0 (attention's scores times
// 1/√d), without writing x·s first.
func softmaxScaled(x []float32, s float32) {
	if len(x) == 0 {
		return
	}
	sum := expSub(x, s, maxf(x)*s)
	scale(x, 1/sum)
}

// SiLU is x·sigmoid(x).
func SiLU(x float32) float32 { return x / (1 + expf(-x)) }

// GELU is the tanh approximation GPT-2 uses: 0.5x(1 + tanh(√(2/π)(x +
// 0.044715x³))), computed as x·sigmoid(2u) (the same function: 0.5(1 +
// tanh u) = 1/(1 + e^(−2u))).
func GELU(x float32) float32 {
	const c = 0.7978845608028654 // sqrt(2/pi)
	u := c * (x + 0.044715*x*x*x)
	return x / (1 + expf(-2*u))
}

// siluMulGo sets a[i] = SiLU(a[i])·b[i].
func siluMulGo(a, b []float32) {
	b = b[:len(a)]
	for i := range a {
		a[i] = SiLU(a[i]) * b[i]
	}
}

// geluGo sets a[i] = GELU(a[i]).
func geluGo(a []float32) {
	for i := range a {
		a[i] = GELU(a[i])
	}
}

func maxGo(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

// expSubGo sets x[i] = e^(x[i]·s−m) and returns their sum.
func expSubGo(x []float32, s, m float32) float32 {
	var sum float32
	for i, v := range x {
		e := expf(float32(float64(v)*float64(s) - float64(m))) // one rounding, as the kernel's FMA
		x[i] = e
		sum += e
	}
	return sum
}

func scaleGo(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

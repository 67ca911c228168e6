package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ulps is how many float32 steps apart a and b are.
func ulps(a, b float32) int64 {
	ia, ib := int64(int32(math.Float32bits(a))), int64(int32(math.Float32bits(b)))
	if ia < 0 {
		ia = math.MinInt32 - ia
	}
	if ib < 0 {
		ib = math.MinInt32 - ib
	}
	if ia > ib {
		return ia - ib
	}
	return ib - ia
}

// TestExpf checks expf and the vector kernel against the float64
// exponential rounded to float32, over the whole range softmax and the
// activations use, and at the edges.
func TestExpf(t *testing.T) {
	var xs []float32
	for x := float32(-90); x <= 89; x += 0.00731 {
		xs = append(xs, x)
	}
	xs = append(xs, 0, -0, 1e-30, -1e-30, expLo, expLo-1e-5, -1000, float32(math.Inf(-1)))
	vec := append([]float32(nil), xs...)
	for len(vec)%8 != 0 {
		vec = vec[:len(vec)-1]
	}
	expSub(vec, 1, 0)
	worst := int64(0)
	for i, x := range xs {
		want := float32(math.Exp(float64(min(x, expHi))))
		if x < expLo {
			want = 0
		}
		got := expf(x)
		if want < 0x1p-126 { // subnormal results: expf flushes or keeps them; both are < 1.2e-38
			if got > 0x1p-125 {
				t.Errorf("expf(%g) = %g, want ≈ 0", x, got)
			}
			continue
		}
		d := ulps(got, want)
		worst = max(worst, d)
		if d > 2 {
			t.Errorf("expf(%g) = %g, want %g (%d ulp)", x, got, want, d)
		}
		if i < len(vec) && ulps(vec[i], got) > 1 {
			t.Errorf("vector e^%g = %g, scalar %g", x, vec[i], got)
		}
	}
	t.Logf("worst error %d ulp over %d values", worst, len(xs))
	if v := expf(float32(math.NaN())); v == v {
		t.Errorf("expf(NaN) = %g, want NaN", v)
	}
	nan := []float32{1, 2, 3, float32(math.NaN()), 5, 6, 7, 8}
	expSub(nan, 1, 0)
	if nan[3] == nan[3] || nan[0] != expf(1) {
		t.Errorf("vector exp with a NaN: %v", nan)
	}
}

// TestVectorActivations checks the SiLU·up, GELU and softmax kernels
// against the scalar definitions at every length 0–40 (the tails).
func TestVectorActivations(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 41 {
		a := make([]float32, n)
		b := make([]float32, n)
		for i := range a {
			a[i] = float32(rng.NormFloat64() * 6)
			b[i] = float32(rng.NormFloat64())
		}
		s, g := append([]float32(nil), a...), append([]float32(nil), a...)
		siluMul(s, b)
		gelu(g)
		for k := range min(n, 9) { // a value's result does not depend on where the slice starts
			s2, g2 := append([]float32(nil), a[k:]...), append([]float32(nil), a[k:]...)
			siluMul(s2, b[k:])
			gelu(g2)
			for i := range s2 {
				if s2[i] != s[k+i] || g2[i] != g[k+i] {
					t.Fatalf("n=%d from %d: value %d differs from the whole slice's", n, k, i)
				}
			}
		}
		for i := range a {
			ws := float64(a[i]) / (1 + math.Exp(-float64(a[i]))) * float64(b[i])
			if d := math.Abs(float64(s[i]) - ws); d > 1e-6*(1+math.Abs(ws)) {
				t.Errorf("n=%d: silu(%g)·%g = %g, want %g", n, a[i], b[i], s[i], ws)
			}
			x := float64(a[i])
			wg := 0.5 * x * (1 + math.Tanh(0.7978845608028654*(x+0.044715*x*x*x)))
			if d := math.Abs(float64(g[i]) - wg); d > 1e-6*(1+math.Abs(wg)) {
				t.Errorf("n=%d: gelu(%g) = %g, want %g", n, a[i], g[i], wg)
			}
		}
		if n < 2 {
			continue
		}
		p := append([]float32(nil), a...)
		masked := rng.IntN(n)
		p[masked] = float32(math.Inf(-1))
		Softmax(p)
		m, sum := math.Inf(-1), 0.0
		for i, v := range a {
			if i != masked {
				m = max(m, float64(v))
			}
		}
		for i, v := range a {
			if i != masked {
				sum += math.Exp(float64(v) - m)
			}
		}
		for i, v := range a {
			want := 0.0
			if i != masked {
				want = math.Exp(float64(v)-m) / sum
			}
			if d := math.Abs(float64(p[i]) - want); d > 1e-6*(1+want) {
				t.Errorf("n=%d: softmax[%d] = %g, want %g", n, i, p[i], want)
			}
		}
	}
}

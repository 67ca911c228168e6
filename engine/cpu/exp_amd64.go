//go:build !purego

package cpu

//go:noescape
func expSubAVX2(x *float32, n int, s, m float32) float32

//go:noescape
func siluMulAVX2(a, b *float32, n int)

//go:noescape
func geluAVX2(a *float32, n int)

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func scaleAVX2(x *float32, n int, s float32)

// maxf is the largest value of x (−Inf when empty).
func maxf(x []float32) float32 {
	n8 := len(x) &^ 7
	if !useAVX2 || n8 == 0 {
		return maxGo(x)
	}
	return max(maxAVX2(&x[0], n8), maxGo(x[n8:]))
}

// expSub sets x[i] = e^(x[i]·s − m) and returns their sum.
func expSub(x []float32, s, m float32) float32 {
	n8 := len(x) &^ 7
	if !useAVX2 || n8 == 0 {
		return expSubGo(x, s, m)
	}
	return expSubAVX2(&x[0], n8, s, m) + expSubGo(x[n8:], s, m)
}

// scale multiplies x by s.
func scale(x []float32, s float32) {
	n8 := len(x) &^ 7
	if useAVX2 && n8 > 0 {
		scaleAVX2(&x[0], n8, s)
	} else {
		n8 = 0
	}
	scaleGo(x[n8:], s)
}

// siluMul sets a[i] = SiLU(a[i])·b[i].
func siluMul(a, b []float32) {
	b = b[:len(a)]
	if !useAVX2 {
		siluMulGo(a, b)
	} else if len(a) > 0 {
		siluMulAVX2(&a[0], &b[0], len(a))
	}
}

// gelu sets a[i] = GELU(a[i]).
func gelu(a []float32) {
	if !useAVX2 {
		geluGo(a)
	} else if len(a) > 0 {
		geluAVX2(&a[0], len(a))
	}
}

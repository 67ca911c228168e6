package cpu

// GemmABT computes out[i*ldo+j] = a_i · b_j for i < n and j < m, over k
// values, where a_i starts at a[i*lda] and b_j at b[j*ldb]: the product of
// a and the transpose of b, with strides, so heads can be read in place
// from fused rows. It is single-threaded (callers split the work) and uses
// the same tile kernels as MatMul.
func GemmABT(out []float32, ldo int, a []float32, lda int, b []float32, ldb int, n, m, k int) {
	if n <= 0 || m <= 0 {
		return
	}
	if k == 0 {
		for i := 0; i < n; i++ {
			clear(out[i*ldo : i*ldo+m])
		}
		return
	}
	R := 3
	if hasTile4 {
		R = 4
	}
	var o9 [9]float32
	var o16 [16]float32
	i := 0
	for ; i+R <= n; i += R {
		ai := a[i*lda:]
		j := 0
		for ; j+R <= m; j += R {
			if R == 4 {
				gemm4x4(ai, lda, b[j*ldb:], ldb, k, &o16)
				for r := 0; r < 4; r++ {
					copy(out[(i+r)*ldo+j:(i+r)*ldo+j+4], o16[r*4:r*4+4])
				}
			} else {
				gemm3x3(ai, lda, b[j*ldb:], ldb, k, &o9)
				for r := 0; r < 3; r++ {
					copy(out[(i+r)*ldo+j:(i+r)*ldo+j+3], o9[r*3:r*3+3])
				}
			}
		}
		for ; j < m; j++ {
			bj := b[j*ldb : j*ldb+k]
			for r := 0; r < R; r++ {
				out[(i+r)*ldo+j] = dot(a[(i+r)*lda:(i+r)*lda+k], bj)
			}
		}
	}
	for ; i < n; i++ {
		ai := a[i*lda : i*lda+k]
		for j := 0; j < m; j++ {
			out[i*ldo+j] = dot(ai, b[j*ldb:j*ldb+k])
		}
	}
}

//go:build !purego

package cpu

import "stepthrough/engine/quant"

// The int8 kernels (dotq_arm64.h) in their two forms, SDOT and SMULL.

//go:noescape
func dotQ8_0Q80SDOT(row *byte, q *int8, d *float32, blocks int) float32

//go:noescape
func dotQ8_0Q80NEON(row *byte, q *int8, d *float32, blocks int) float32

//go:noescape
func dotQ4_0Q80SDOT(row *byte, q *int8, d *float32, blocks int) float32

//go:noescape
func dotQ4_0Q80NEON(row *byte, q *int8, d *float32, blocks int) float32

//go:noescape
func dotQ5_0Q80SDOT(row *byte, q *int8, d *float32, blocks int) float32

//go:noescape
func dotQ5_0Q80NEON(row *byte, q *int8, d *float32, blocks int) float32

//go:noescape
func dotQ4_KQ8SDOT(row *byte, q *int8, bs *int16, d *float32, blocks int) float32

//go:noescape
func dotQ4_KQ8NEON(row *byte, q *int8, bs *int16, d *float32, blocks int) float32

//go:noescape
func dotQ5_KQ8SDOT(row *byte, q *int8, bs *int16, d *float32, blocks int) float32

//go:noescape
func dotQ5_KQ8NEON(row *byte, q *int8, bs *int16, d *float32, blocks int) float32

//go:noescape
func dotQ6_KQ8SDOT(row *byte, q *int8, bs *int16, d *float32, blocks int) float32

//go:noescape
func dotQ6_KQ8NEON(row *byte, q *int8, bs *int16, d *float32, blocks int) float32

//go:noescape
func quantizeQ80NEON(x *float32, q *int8, d *float32, blocks int, back *float32)

//go:noescape
func quantizeQ8KNEON(x *float32, q *int8, bs *int16, d *float32, blocks int)

// q80Kernel and kq8Kernel are the shapes of the Q8_0-activation and the
// q8K kernels.
type (
	q80Kernel func(row *byte, q *int8, d *float32, blocks int) float32
	kq8Kernel func(row *byte, q *int8, bs *int16, d *float32, blocks int) float32
)

// int8Kernels are one form of the int8 kernels.
type int8Kernels struct {
	q80, q40, q50 q80Kernel
	q4k, q5k, q6k kq8Kernel
}

var (
	sdotKernels  = int8Kernels{dotQ8_0Q80SDOT, dotQ4_0Q80SDOT, dotQ5_0Q80SDOT, dotQ4_KQ8SDOT, dotQ5_KQ8SDOT, dotQ6_KQ8SDOT}
	smullKernels = int8Kernels{dotQ8_0Q80NEON, dotQ4_0Q80NEON, dotQ5_0Q80NEON, dotQ4_KQ8NEON, dotQ5_KQ8NEON, dotQ6_KQ8NEON}
)

// int8s are the int8 kernels that run here: SDOT's where the CPU has it.
var int8s = func() int8Kernels {
	if useDotProd {
		return sdotKernels
	}
	return smullKernels
}()

// kq8 is the kernel for rows of type t (Q4_K, Q5_K or Q6_K) and its
// block size.
func kq8(t quant.Type) (kq8Kernel, int) {
	switch {
	case !useNEON:
	case t == quant.Q4_K:
		return int8s.q4k, 144
	case t == quant.Q5_K:
		return int8s.q5k, 176
	case t == quant.Q6_K:
		return int8s.q6k, 210
	}
	return nil, 0
}

// dotQ8_0Q80 is a Q8_0 row times the rounded vector whose blocks start at b0.
func dotQ8_0Q80(row []byte, z *q80, b0 int) float32 {
	return dotQ80(int8s.q80, 34, dotQ8_0Q80Go, row, z, b0)
}

// dotQ4_0Q80 is a Q4_0 row times the rounded vector whose blocks start at b0.
func dotQ4_0Q80(row []byte, z *q80, b0 int) float32 {
	return dotQ80(int8s.q40, 18, dotQ4_0Q80Go, row, z, b0)
}

// dotQ5_0Q80 is a Q5_0 row times the rounded vector whose blocks start at b0.
func dotQ5_0Q80(row []byte, z *q80, b0 int) float32 {
	return dotQ80(int8s.q50, 22, dotQ5_0Q80Go, row, z, b0)
}

// dotQ80 is a row (blocks of bb bytes) times the rounded vector whose
// blocks start at b0, by the kernel k or else its Go form.
func dotQ80(k q80Kernel, bb int, inGo func([]byte, *q80, int) float32, row []byte, z *q80, b0 int) float32 {
	nb := len(row) / bb
	if !useNEON || nb == 0 {
		return inGo(row, z, b0)
	}
	_, _ = z.q[(b0+nb)*32-1], z.d[b0+nb-1]
	return k(&row[0], &z.q[b0*32], &z.d[b0], nb)
}

// quantizeQ80 rounds x (a multiple of 32 values) into q and d, and with
// back (len(x) values) writes the rounded values d·q there too.
func quantizeQ80(x []float32, q []int8, d []float32, back []float32) {
	nb := len(x) / 32
	if !useNEON || nb == 0 {
		quantizeQ80Go(x, q, d, back)
		return
	}
	_, _ = q[nb*32-1], d[nb-1]
	var b *float32
	if back != nil {
		_ = back[nb*32-1]
		b = &back[0]
	}
	quantizeQ80NEON(&x[0], &q[0], &d[0], nb, b)
}

// quantizeQ8K quantizes x (a multiple of 256 values) into z's blocks from
// block b0 on.
func quantizeQ8K(x []float32, z *q8K, b0 int) {
	nb := len(x) / 256
	if !useNEON || nb == 0 {
		quantizeQ8KGo(x, z, b0)
		return
	}
	_, _, _ = z.q[(b0+nb)*256-1], z.bs[(b0+nb)*16-1], z.d[b0+nb-1]
	quantizeQ8KNEON(&x[0], &z.q[b0*256], &z.bs[b0*16], &z.d[b0], nb)
}

// dotKQ8 is a Q4_K, Q5_K or Q6_K row times x quantized (blocks from b0).
func dotKQ8(t quant.Type, row []byte, z *q8K, b0 int) float32 {
	k, bb := kq8(t)
	if k == nil || len(row) < bb {
		return dotKQ8Go(t, row, z, b0)
	}
	nb := len(row) / bb
	_, _, _ = z.q[(b0+nb)*256-1], z.bs[(b0+nb)*16-1], z.d[b0+nb-1]
	return k(&row[0], &z.q[b0*256], &z.bs[b0*16], &z.d[b0], nb)
}

// dotRowsKQ8 is rows [lo, hi) of a Q4_K, Q5_K or Q6_K matrix times one
// quantized x.
func dotRowsKQ8(t quant.Type, data []byte, rb, lo, hi int, z *q8K, out []float32) {
	dotRowsKQ8Multi(t, data, rb, lo, hi, z, 1, rb/t.BlockBytes(), out, 0, nil, nil)
}

// dotRowsKQ8Multi is rows [lo, hi) times each of n quantized vectors (nb
// blocks each): out[v*rows+r]. A row stays in L1 while every vector
// passes over it.
func dotRowsKQ8Multi(t quant.Type, data []byte, rb, lo, hi int, z *q8K, n, nb int, out []float32, rows int, _ []int32, _ []byte) {
	if lo >= hi {
		return
	}
	_ = data[hi*rb-1]
	_ = out[(n-1)*rows+hi-1]
	k, bb := kq8(t)
	if k == nil || nb == 0 || rb != nb*bb {
		for r := lo; r < hi; r++ {
			for v := range n {
				out[v*rows+r] = dotKQ8Go(t, data[r*rb:(r+1)*rb], z, v*nb)
			}
		}
		return
	}
	_, _, _ = z.q[n*nb*256-1], z.bs[n*nb*16-1], z.d[n*nb-1]
	for r := lo; r < hi; r++ {
		for v := range n {
			out[v*rows+r] = k(&data[r*rb], &z.q[v*nb*256], &z.bs[v*nb*16], &z.d[v*nb], nb)
		}
	}
}

//go:noescape
func dotQ4_0NEON(row *byte, x *float32, xs *float32, blocks int) float32

//go:noescape
func dotQ4_1NEON(row *byte, x *float32, xs *float32, blocks int) float32

// legacyKernel is the float-x kernel for rows of type t: Q4_0 and Q4_1
// (nil for Q5_0 and Q5_1, whose products stay in Go).
func legacyKernel(t quant.Type) func(row *byte, x *float32, xs *float32, blocks int) float32 {
	switch {
	case !useNEON:
	case t == quant.Q4_0:
		return dotQ4_0NEON
	case t == quant.Q4_1:
		return dotQ4_1NEON
	}
	return nil
}

// dotLegacy is a Q4_0, Q5_0, Q4_1 or Q5_1 row times x (xs: x's sums over
// 32 values).
func dotLegacy(t quant.Type, row []byte, x, xs []float32) float32 {
	k, nb := legacyKernel(t), len(row)/t.BlockBytes()
	if k == nil || nb == 0 {
		return dotLegacyGo(t, row, x, xs)
	}
	_, _ = x[nb*32-1], xs[nb-1]
	return k(&row[0], &x[0], &xs[0], nb)
}

// dotRowsK writes out[r] = row r of a legacy 4-/5-bit matrix (rows of rb
// bytes in data) times x, for r in [lo, hi), the bounds checked once.
func dotRowsK(t quant.Type, data []byte, rb, lo, hi int, x, xs, out []float32) {
	if lo >= hi {
		return
	}
	_ = data[hi*rb-1]
	_ = out[hi-1]
	k, nb := legacyKernel(t), rb/t.BlockBytes()
	if k == nil || nb == 0 {
		for r := lo; r < hi; r++ {
			out[r] = dotLegacyGo(t, data[r*rb:(r+1)*rb], x, xs)
		}
		return
	}
	_, _ = x[nb*32-1], xs[nb-1]
	for r := lo; r < hi; r++ {
		out[r] = k(&data[r*rb], &x[0], &xs[0], nb)
	}
}

//go:build cgo

package vulkan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"stepthrough/engine/cpu"
	"stepthrough/engine/model"
)

// The families' operations against the CPU's (or, where the CPU has no
// exported op, the formula in float64), on lavapipe under validation.
func TestFamilyOps(t *testing.T) {
	d := openTest(t, false)
	r := rand.New(rand.NewPCG(3, 9))
	t.Run("geglu scale softcap", func(t *testing.T) {
		for _, n := range []int{1, 255, 257, 5000} {
			a, b := randVec(r, n, 6), randVec(r, n, 2)
			ref := make([]float32, n)
			for i := range ref {
				ref[i] = cpu.GELU(a[i]) * b[i]
			}
			ab, bb := buf(t, d, a), buf(t, d, b)
			run(t, d, func(c *cmd) { c.geGLU(set(t, d, ab, bb), n) })
			expectNMSE(t, fmt.Sprint("geglu ", n), ref, read(t, d, ab, n), 1e-7)
			for i := range ref {
				ref[i] = b[i] * 25.3
			}
			run(t, d, func(c *cmd) { c.scale(set(t, d, bb), n, 25.3) })
			expectNMSE(t, fmt.Sprint("scale ", n), ref, read(t, d, bb, n), 1e-12)
			x := randVec(r, n, 40)
			x[0] = float32(math.Inf(-1)) // a masked score
			for i := range ref {
				ref[i] = float32(7 * math.Tanh(float64(x[i])/7))
			}
			xb := buf(t, d, x)
			run(t, d, func(c *cmd) { c.softcap(set(t, d, xb), n, 7) })
			got := read(t, d, xb, n)
			if !math.IsInf(float64(got[0]), -1) {
				t.Fatalf("softcap turned −∞ into %g", got[0])
			}
			got[0], ref[0] = 0, 0
			expectNMSE(t, fmt.Sprint("softcap ", n), ref, got, 1e-10)
		}
	})
	t.Run("sliding window", func(t *testing.T) {
		for _, c := range []struct{ heads, kvHeads, hd, pos0, n, window int }{{4, 2, 8, 0, 9, 3}, {2, 1, 16, 20, 1, 5}, {2, 2, 8, 6, 6, 1}} {
			ctx, qd, kvd := c.pos0+c.n, c.heads*c.hd, c.kvHeads*c.hd
			q, k := randVec(r, c.n*qd, 1), randVec(r, ctx*kvd, 1)
			a := attn{heads: c.heads, kvHeads: c.kvHeads, headDim: c.hd, ctx: ctx, pos0: c.pos0, n: c.n, scale: 0.3, qStride: qd, kvDim: kvd, outStride: qd, window: c.window}
			qb, kb, sb := buf(t, d, q), buf(t, d, k), buf(t, d, make([]float32, c.n*c.heads*ctx))
			run(t, d, func(cm *cmd) { cm.attnScores(set(t, d, qb, kb, sb), a) })
			got := read(t, d, sb, c.n*c.heads*ctx)
			for t0 := 0; t0 < c.n; t0++ {
				pos := c.pos0 + t0
				for h := 0; h < c.heads; h++ {
					for j := 0; j < ctx; j++ {
						visible := j <= pos && j > pos-c.window
						if v := got[(t0*c.heads+h)*ctx+j]; visible == math.IsInf(float64(v), -1) {
							t.Fatalf("window %+v: query %d key %d: score %g (visible %v)", c, pos, j, v, visible)
						}
					}
				}
			}
		}
	})
	t.Run("scaled rope", func(t *testing.T) {
		for k, rp := range []model.RopeParams{
			{Base: 1e6, FreqScale: 1, AttnFactor: 1},
			{Base: 10000, FreqScale: 0.125, AttnFactor: 1},
			{Base: 10000, FreqScale: 0.25, ExtFactor: 1, AttnFactor: 0.9, Corr: [2]float32{3, 11}},
			{Base: 10000, FreqScale: 1, AttnFactor: 1.2}, // with frequency factors
		} {
			heads, hd, n, pos0 := 3, 32, 4, 40
			factors := make([]float32, hd/2)
			for i := range factors {
				factors[i] = 1
				if k == 3 {
					factors[i] = 1 + float32(i)/3
				}
			}
			stride := heads * hd
			x := randVec(r, n*stride, 1)
			ref := append([]float32(nil), x...)
			for t0 := 0; t0 < n; t0++ {
				for h := 0; h < heads; h++ {
					for i := 0; i < hd/2; i++ {
						extrap := float64(pos0+t0) * math.Pow(float64(rp.Base), -2*float64(i)/float64(hd)) / float64(factors[i])
						theta, m := float64(rp.FreqScale)*extrap, float64(rp.AttnFactor)
						if rp.ExtFactor != 0 {
							y := (float64(i) - float64(rp.Corr[0])) / math.Max(0.001, float64(rp.Corr[1]-rp.Corr[0]))
							ramp := (1 - math.Min(1, math.Max(0, y))) * float64(rp.ExtFactor)
							theta = theta*(1-ramp) + extrap*ramp
							m *= 1 + 0.1*math.Log(1/float64(rp.FreqScale))
						}
						a, b := t0*stride+h*hd+i, t0*stride+h*hd+i+hd/2 // NEOX
						x0, x1 := float64(x[a]), float64(x[b])
						ref[a] = float32((x0*math.Cos(theta) - x1*math.Sin(theta)) * m)
						ref[b] = float32((x0*math.Sin(theta) + x1*math.Cos(theta)) * m)
					}
				}
			}
			xb, fb := buf(t, d, x), buf(t, d, factors)
			run(t, d, func(cm *cmd) { cm.rope(set(t, d, xb, fb), heads, hd, hd, pos0, n, &rp, k == 3, 1, stride) })
			expectNMSE(t, fmt.Sprintf("rope %+v", rp), ref, read(t, d, xb, len(x)), 1e-3)
		}
	})
}

//go:build cgo

package vulkan

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"stepthrough/engine/cpu"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// TestFusedOps checks each op of the fused path against the CPU ops it
// replaces, with llama.cpp's thresholds: the norm, add and gated matrix
// products (rows read from a row offset of a shared buffer, 1–17 vectors;
// against the decoded weights multiplied in float32),
// the rotation and cache writes, and attention in one dispatch (the
// position from the push constants and from the params buffer).
func TestFusedOps(t *testing.T) {
	d := openTest(t, false)
	if !d.Info.SubgroupArith {
		t.Skip("the fused path needs subgroup arithmetic, which this device lacks")
	}
	r := rand.New(rand.NewPCG(3, 4))
	pool := cpu.NewPool(2)
	defer pool.Close()
	const eps = 1e-5
	t.Run("matmul", func(t *testing.T) {
		for _, typ := range []quant.Type{quant.F32, quant.F16, quant.Q8_0, quant.Q4_0, quant.Q4_K, quant.Q6_K} {
			cols := max(64, typ.BlockElems())
			for _, s := range [][2]int{{1, 1}, {33, 3}, {100, 9}, {65, 17}} {
				rows, n := s[0], s[1]
				// three matrices end to end: rows0 ahead of the two that are read
				rows0 := 5
				all := randVec(r, (rows0+2*rows)*cols, 1)
				raw, _ := quant.Quantize(typ, all)
				// the reference multiplies the decoded weights in float32, as the
				// shaders do (the CPU's K-quant kernels round x to 8 bits)
				dec := make([]float32, len(all))
				if err := quant.Dequantize(typ, raw, dec); err != nil {
					t.Fatal(err)
				}
				f32 := f32bytes(dec)
				rb := 4 * cols
				gate := &model.Tensor{Name: "g", Type: quant.F32, Dims: []int{cols, rows}, Data: f32[rows0*rb : (rows0+rows)*rb]}
				up := &model.Tensor{Name: "u", Type: quant.F32, Dims: []int{cols, rows}, Data: f32[(rows0+rows)*rb:]}
				x, g, y0 := randVec(r, n*cols, 2), randVec(r, cols, 1), randVec(r, n*rows, 1)
				xn := make([]float32, n*cols)
				for t := range n {
					cpu.RMSNorm(xn[t*cols:(t+1)*cols], x[t*cols:(t+1)*cols], g, eps)
				}
				scratch := [][]float32{make([]float32, cpu.ScratchFloats(cols)), make([]float32, cpu.ScratchFloats(cols))}
				norm, add, gu, uu := make([]float32, n*rows), make([]float32, n*rows), make([]float32, n*rows), make([]float32, n*rows)
				pool.MatMul(norm, gate, xn, n, scratch)
				pool.MatMul(add, gate, x, n, scratch)
				for i := range add {
					add[i] += y0[i]
				}
				pool.MatMul(gu, gate, xn, n, scratch)
				pool.MatMul(uu, up, xn, n, scratch)
				for i := range gu {
					gu[i] = cpu.SiLU(gu[i]) * uu[i]
				}
				name := fmt.Sprintf("%s %d×%d n=%d", typ, rows, cols, n)
				wb, xb, gb := rawBuf(t, d, raw), buf(t, d, x), buf(t, d, g)
				yb := buf(t, d, make([]float32, n*rows))
				run(t, d, func(c *cmd) {
					c.matMulF(set(t, d, wb, xb, yb, gb), shaderType(typ), rows, cols, n, fused{flags: fuseNorm, row0: rows0, eps: eps})
				})
				expectNMSE(t, "norm "+name, norm, read(t, d, yb, n*rows), 5e-4)
				yb = buf(t, d, y0)
				run(t, d, func(c *cmd) {
					c.matMulF(set(t, d, wb, xb, yb, gb), shaderType(typ), rows, cols, n, fused{flags: fuseAdd, row0: rows0})
				})
				expectNMSE(t, "add "+name, add, read(t, d, yb, n*rows), 5e-4)
				yb = buf(t, d, make([]float32, n*rows))
				run(t, d, func(c *cmd) {
					c.matMulF(set(t, d, wb, xb, yb, gb), shaderType(typ), rows, cols, n, fused{flags: fuseNorm | fuseGated, row0: rows0, eps: eps})
				})
				expectNMSE(t, "gated "+name, gu, read(t, d, yb, n*rows), 5e-4)
				if n == 1 { // the last row of a chunk: X from an offset
					xo := buf(t, d, append(randVec(r, 3*cols, 1), x...))
					yb = buf(t, d, make([]float32, rows))
					run(t, d, func(c *cmd) {
						c.matMulF(set(t, d, wb, xo, yb, gb), shaderType(typ), rows, cols, 1, fused{flags: fuseNorm, row0: rows0, xOff: 3 * cols, eps: eps})
					})
					expectNMSE(t, "norm from an offset "+name, norm, read(t, d, yb, rows), 5e-4)
				}
			}
		}
	})
	params := func(t *testing.T, pos int) *buffer {
		return rawBuf(t, d, binary.LittleEndian.AppendUint32(nil, uint32(pos)))
	}
	t.Run("qkv post", func(t *testing.T) {
		for _, c := range []struct{ heads, kvHeads, hd, dims, pos0, n, mode int }{{4, 2, 16, 16, 0, 3, 0}, {2, 2, 64, 32, 9, 1, 0}, {4, 1, 32, 32, 5, 4, 1}} {
			qd, kvd := c.heads*c.hd, c.kvHeads*c.hd
			w := qd + 2*kvd
			s := randVec(r, c.n*w, 1)
			ctx := c.pos0 + c.n
			q, kc, vc := make([]float32, c.n*qd), make([]float32, ctx*kvd), make([]float32, ctx*kvd)
			cache := make([]float32, c.hd+2)
			rope := cpu.RopeNorm
			if c.mode == 1 {
				rope = cpu.RopeNeoX
			}
			for t := range c.n {
				row := s[t*w : (t+1)*w]
				copy(q[t*qd:], row[:qd])
				rope(q[t*qd:(t+1)*qd], c.heads, c.hd, c.dims, c.pos0+t, 10000, cache)
				k := kc[(c.pos0+t)*kvd : (c.pos0+t+1)*kvd]
				copy(k, row[qd:qd+kvd])
				rope(k, c.kvHeads, c.hd, c.dims, c.pos0+t, 10000, cache)
				copy(vc[(c.pos0+t)*kvd:], row[qd+kvd:])
			}
			for _, viaParams := range []bool{false, true} {
				a := attn{heads: c.heads, kvHeads: c.kvHeads, headDim: c.hd, n: c.n, qStride: qd, kvDim: kvd, pos0: c.pos0}
				pb := params(t, 0)
				if viaParams {
					a.pos0, pb = 0, params(t, c.pos0)
				}
				sb, qb := buf(t, d, s), buf(t, d, make([]float32, len(q)))
				kb, vb := buf(t, d, make([]float32, len(kc))), buf(t, d, make([]float32, len(vc)))
				run(t, d, func(cm *cmd) { cm.qkvPost(set(t, d, sb, qb, kb, vb, pb), a, c.dims, c.mode, 10000) })
				name := fmt.Sprintf("%+v params %v", c, viaParams)
				expectNMSE(t, "q "+name, q, read(t, d, qb, len(q)), 1e-6)
				expectNMSE(t, "k cache "+name, kc, read(t, d, kb, len(kc)), 1e-6)
				expectNMSE(t, "v cache "+name, vc, read(t, d, vb, len(vc)), 1e-12)
			}
		}
	})
	t.Run("attention", func(t *testing.T) {
		for _, c := range []struct{ heads, kvHeads, hd, pos0, n int }{{8, 4, 8, 0, 5}, {6, 6, 48, 20, 1}, {4, 1, 16, 3, 7}, {2, 2, 64, 130, 1}} {
			ctx := c.pos0 + c.n
			qd, kvd := c.heads*c.hd, c.kvHeads*c.hd
			q, k, v := randVec(r, c.n*qd, 1), randVec(r, ctx*kvd, 1), randVec(r, ctx*kvd, 1)
			scale := float32(1 / math.Sqrt(float64(c.hd)))
			want := make([]float32, c.n*qd)
			group := c.heads / c.kvHeads
			for t0 := range c.n {
				for h := range c.heads {
					vis := c.pos0 + t0 + 1
					w := make([]float32, vis)
					for j := range vis {
						for e := range c.hd {
							w[j] += q[t0*qd+h*c.hd+e] * k[j*kvd+(h/group)*c.hd+e]
						}
						w[j] *= scale
					}
					cpu.Softmax(w)
					for j := range vis {
						for e := range c.hd {
							want[t0*qd+h*c.hd+e] += w[j] * v[j*kvd+(h/group)*c.hd+e]
						}
					}
				}
			}
			for _, viaParams := range []bool{false, true} {
				a := attn{heads: c.heads, kvHeads: c.kvHeads, headDim: c.hd, pos0: c.pos0, n: c.n, scale: scale, qStride: qd, kvDim: kvd, outStride: qd}
				pb := params(t, 0)
				if viaParams {
					a.pos0, pb = 0, params(t, c.pos0)
				}
				qb, kb, vb, ob := buf(t, d, q), buf(t, d, k), buf(t, d, v), buf(t, d, make([]float32, len(want)))
				run(t, d, func(cm *cmd) { cm.attnFused(set(t, d, qb, kb, vb, ob, pb), a) })
				expectNMSE(t, fmt.Sprintf("attn fused %+v params %v", c, viaParams), want, read(t, d, ob, len(want)), 5e-4)
			}
		}
	})
}

//go:build cgo

package vulkan

import (
	"fmt"
	"math"

	vk "github.com/vulkan-go/vulkan"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// Each op records one dispatch; its descriptor set binds the buffers in
// the order the shader declares them (see shaders/*.comp).

func groups(n, size int) uint32 { return uint32((n + size - 1) / size) }

// shaderType names the matmul/get_rows variant for a weight type, or ""
// when the type is decoded to F32 at upload instead.
func shaderType(t quant.Type) string {
	switch t {
	case quant.F32:
		return "f32"
	case quant.F16:
		return "f16"
	case quant.Q8_0:
		return "q8_0"
	case quant.Q4_0:
		return "q4_0"
	case quant.Q4_1:
		return "q4_1"
	case quant.Q5_0:
		return "q5_0"
	case quant.Q5_1:
		return "q5_1"
	case quant.Q4_K:
		return "q4_k"
	case quant.Q5_K:
		return "q5_k"
	case quant.Q6_K:
		return "q6_k"
	}
	return ""
}

// xBlock is the block size in which the CPU rounds the vector it
// multiplies with rows of type t and cols values to 8 bits before the
// product (engine/cpu's hasQ80Kernel and hasQ8Kernel: 32 for Q8_0, Q5_0
// and Q4_0, 256 for the K-quants it has int8 kernels for), or 0 when it
// multiplies floats. The shaders round x the same way first (RoundX), so
// both backends multiply the same numbers.
func xBlock(t quant.Type, cols int) int {
	switch {
	case (t == quant.Q8_0 || t == quant.Q5_0 || t == quant.Q4_0) && cols%32 == 0:
		return 32
	case (t == quant.Q4_K || t == quant.Q5_K || t == quant.Q6_K) && cols%256 == 0:
		return 256
	}
	return 0
}

// roundX: set (X, Xr); Xr = X[xoff:xoff+count] rounded to 8 bits in
// blocks of qk values (32 or 256, see xBlock and round_x.comp).
func (c *cmd) roundX(set vk.DescriptorSet, qk, count, xoff int) {
	blocks := count / qk
	c.dispatch(fmt.Sprintf("round_x%d", qk), set, []uint32{uint32(blocks), uint32(xoff)}, groups(blocks, 64), 1, 1)
}

// rmsNormRound: set (X, W, O); O = RMSNorm(X[t]) rounded to 8 bits in
// blocks of qk values (as RoundX rounds), for the n rows from row t0.
func (c *cmd) rmsNormRound(set vk.DescriptorSet, qk, t0, n, cols int, eps float32) {
	c.dispatch(fmt.Sprintf("rmsnorm_round%d", qk), set, []uint32{uint32(cols), math.Float32bits(eps), uint32(t0)}, uint32(n), 1, 1)
}

// tiledMinVectors is the fewest vectors MatMul multiplies in 32 × 32 tiles
// (matmul_tiled.comp) rather than a row per workgroup (a variable so
// BenchmarkPrefillVulkan can measure both).
var tiledMinVectors = 16

// matMul: set (W, X, Y); Y[t][r] = W[row0+r]·X[t], rows×cols weights
// (from row row0 of the buffer), n vectors.
func (c *cmd) matMul(set vk.DescriptorSet, wtype string, rows, cols, n, row0 int) {
	if n >= tiledMinVectors && (rows+31)/32 <= 65535 && (n+31)/32 <= 65535 {
		c.dispatch("matmult_"+wtype, set, []uint32{uint32(rows), uint32(cols), uint32(n), uint32(row0)}, groups(rows, 32), groups(n, 32), 1)
		return
	}
	gx := min(rows, 65535)
	c.dispatch("matmul_"+wtype, set, []uint32{uint32(rows), uint32(cols), uint32(n), uint32(row0)}, uint32(gx), groups(rows, 65535), 1)
}

// getRows: set (W, IDS, O); O[t] (+)= W[IDS[t]].
func (c *cmd) getRows(set vk.DescriptorSet, wtype string, cols, n int, add bool) {
	a := uint32(0)
	if add {
		a = 1
	}
	c.dispatch("get_rows_"+wtype, set, []uint32{uint32(cols), uint32(n), a}, groups(cols*n, 256), 1, 1)
}

// rmsNorm: set (X, W, O) over n rows of cols.
func (c *cmd) rmsNorm(set vk.DescriptorSet, n, cols int, eps float32) {
	c.dispatch("rmsnorm", set, []uint32{uint32(cols), math.Float32bits(eps)}, uint32(n), 1, 1)
}

// layerNorm: set (X, W, B, O) over n rows of cols.
func (c *cmd) layerNorm(set vk.DescriptorSet, n, cols int, eps float32) {
	c.dispatch("layernorm", set, []uint32{uint32(cols), math.Float32bits(eps)}, uint32(n), 1, 1)
}

// rope: set (X, F), X in place; mode 0 NORM, 1 NEOX; rp's base and
// scaling (nil: base 10000, unscaled); F the pairs' frequency factors when
// factors is set (else any buffer).
func (c *cmd) rope(set vk.DescriptorSet, heads, headDim, dims, pos0, n int, rp *model.RopeParams, factors bool, mode, rowStride int) {
	if rp == nil {
		rp = &model.RopeParams{Base: 10000, FreqScale: 1, AttnFactor: 1}
	}
	f := math.Float32bits
	has := uint32(0)
	if factors {
		has = 1
	}
	c.dispatch("rope", set, []uint32{uint32(heads), uint32(headDim), uint32(dims), uint32(pos0), uint32(n), f(rp.Base), uint32(mode), uint32(rowStride),
		f(rp.FreqScale), f(rp.ExtFactor), f(rp.AttnFactor), f(rp.Corr[0]), f(rp.Corr[1]), has},
		groups(n*heads*dims/2, 64), 1, 1)
}

// attn holds the shapes of an attention dispatch.
type attn struct {
	heads, kvHeads, headDim, ctx, pos0, n int
	scale                                 float32
	qStride, kvDim, outStride             int
	window                                int // a local layer's sliding window (0: none)
}

// attnScores: set (Q, Kcache, S).
func (c *cmd) attnScores(set vk.DescriptorSet, a attn) {
	c.dispatch("attn_scores", set, []uint32{uint32(a.heads), uint32(a.kvHeads), uint32(a.headDim), uint32(a.ctx), uint32(a.pos0), uint32(a.n),
		math.Float32bits(a.scale), uint32(a.qStride), uint32(a.kvDim), uint32(a.window)}, groups(a.n*a.heads*a.ctx, 64), 1, 1)
}

// softmax: set (S), rows of rowLen, in place.
func (c *cmd) softmax(set vk.DescriptorSet, rowLen, rows int) {
	c.dispatch("softmax", set, []uint32{uint32(rowLen)}, uint32(min(rows, 65535)), groups(rows, 65535), 1)
}

// attnOut: set (S, Vcache, O).
func (c *cmd) attnOut(set vk.DescriptorSet, a attn) {
	c.dispatch("attn_out", set, []uint32{uint32(a.heads), uint32(a.kvHeads), uint32(a.headDim), uint32(a.ctx), uint32(a.pos0), uint32(a.n),
		0, uint32(a.outStride), uint32(a.kvDim)}, groups(a.n*a.heads*a.headDim, 64), 1, 1)
}

// swiGLU: set (A, B); A = silu(A)·B.
func (c *cmd) swiGLU(set vk.DescriptorSet, count int) {
	c.dispatch("swiglu", set, []uint32{uint32(count)}, groups(count, 256), 1, 1)
}

// gelu: set (A); A = gelu(A).
func (c *cmd) gelu(set vk.DescriptorSet, count int) {
	c.dispatch("gelu", set, []uint32{uint32(count)}, groups(count, 256), 1, 1)
}

// geGLU: set (A, B); A = gelu(A)·B.
func (c *cmd) geGLU(set vk.DescriptorSet, count int) {
	c.dispatch("geglu", set, []uint32{uint32(count)}, groups(count, 256), 1, 1)
}

// scale: set (X); X *= s.
func (c *cmd) scale(set vk.DescriptorSet, count int, s float32) {
	c.dispatch("scale", set, []uint32{uint32(count), math.Float32bits(s)}, groups(count, 256), 1, 1)
}

// softcap: set (X); X = cap·tanh(X/cap), −∞ kept.
func (c *cmd) softcap(set vk.DescriptorSet, count int, cap float32) {
	c.dispatch("softcap", set, []uint32{uint32(count), math.Float32bits(cap)}, groups(count, 256), 1, 1)
}

// add: set (X, Y); X[i] += Y[i % ylen].
func (c *cmd) add(set vk.DescriptorSet, count, ylen int) {
	c.dispatch("add", set, []uint32{uint32(count), uint32(ylen)}, groups(count, 256), 1, 1)
}

// copyRows: set (Src, Dst); n rows of width floats between strided places.
func (c *cmd) copyRows(set vk.DescriptorSet, width, n, srcOff, srcStride, dstOff, dstStride int) {
	c.dispatch("copy_rows", set, []uint32{uint32(width), uint32(n), uint32(srcOff), uint32(srcStride), uint32(dstOff), uint32(dstStride)},
		groups(width*n, 256), 1, 1)
}

// The fused path (see fused.go): a matrix product that folds in the norm
// before it, the residual add after it, or SwiGLU's gate.
const (
	fuseNorm  = 1 // X[t] RMS-normalised with the weights G
	fuseAdd   = 2 // Y += W·x
	fuseGated = 8 // rows r and rows+r (gate, up): Y = silu(gate·x)·(up·x)
)

// fusedVariants names the compiled variant for each combination of flags.
var fusedVariants = map[int]string{fuseNorm: "norm", fuseNorm | fuseGated: "gated", fuseGated: "gatedx", fuseAdd: "add"}

// fused configures MatMulF.
type fused struct {
	flags int
	row0  int // the matrix's first row in its buffer
	xOff  int // X's first float
	eps   float32
}

// matMulF: set (W, X, Y, G); Y[t][r] (+)= W[row0+r]·x(X[t]). The flags
// name a variant compiled for them: fuseNorm, fuseNorm|fuseGated,
// fuseGated or fuseAdd.
func (c *cmd) matMulF(set vk.DescriptorSet, wtype string, rows, cols, n int, f fused) {
	variant := fusedVariants[f.flags]
	if variant == "" {
		panic(fmt.Sprintf("vulkan: no fused matmul for flags %d", f.flags)) // a programming error: the combinations are fixed in fused.go
	}
	gx := min(rows, 65535)
	c.dispatch("matmulf_"+variant+"_"+wtype, set, []uint32{uint32(rows), uint32(cols), uint32(n), uint32(f.row0),
		math.Float32bits(f.eps), uint32(f.xOff)}, uint32(gx), groups(rows, 65535), 1)
}

// qkvPost: set (QKV, Q, Kcache, Vcache, P): Q and K rotated (rope dims,
// mode 0 NORM or 1 NEOX), K and V written into the caches at position
// pos0 + P[0] + t.
func (c *cmd) qkvPost(set vk.DescriptorSet, a attn, ropeDims, mode int, base float32) {
	W := a.qStride + 2*a.kvDim
	c.dispatch("qkv_post", set, []uint32{uint32(a.heads), uint32(a.kvHeads), uint32(a.headDim), uint32(ropeDims), uint32(a.pos0), uint32(a.n),
		math.Float32bits(base), uint32(mode), uint32(a.qStride), uint32(a.kvDim)}, groups(a.n*W, 64), 1, 1)
}

// attnFused: set (Q, Kcache, Vcache, O, P): scores, softmax and the
// weighted sum of V for each row and head, one workgroup each.
func (c *cmd) attnFused(set vk.DescriptorSet, a attn) {
	c.dispatch("attn_fused", set, []uint32{uint32(a.heads), uint32(a.kvHeads), uint32(a.headDim), 0, uint32(a.pos0), uint32(a.n),
		math.Float32bits(a.scale), uint32(a.qStride), uint32(a.kvDim), uint32(a.outStride)}, uint32(a.n*a.heads), 1, 1)
}

// maxFusedCtx is the most positions attn_fused holds in shared memory
// (MAXCTX in the shader).
const maxFusedCtx = 2048

// edit: set (X, V); an intervention on n rows of stride floats: columns
// [lo, lo+w) of the rows at position pos (MaxUint32: every row; row t is
// position pos0+t), by op (intervene.Op: zero, scale, replace with
// V[voff:], add factor × V[voff:]).
func (c *cmd) edit(set vk.DescriptorSet, n, stride, lo, w, pos0 int, pos, op uint32, factor float32, voff int) {
	c.dispatch("edit", set, []uint32{uint32(n), uint32(stride), uint32(lo), uint32(w), uint32(pos0), pos, op, math.Float32bits(factor), uint32(voff)},
		groups(n*w, 256), 1, 1)
}

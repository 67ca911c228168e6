//go:build cgo

package vulkan

import (
	"encoding/binary"
	"math"

	"stepthrough/engine/model"
)

// The fused path: a pass no hook watches needs only the logits, so the
// work around each matrix product folds into it and a llama-style layer
// is six dispatches (19 unfused): Q·K·V as one product (the three
// matrices lie end to end in one buffer) with the attention norm folded
// in; rotation and the KV-cache writes in one; attention (scores,
// softmax, weighted sum) in one; the output projection adding into the
// residual; gate and up in one product with the FFN norm, each workgroup
// taking a gate row and its up row and writing silu(gate)·up; down adding
// into the residual. The position comes from a
// small buffer, not the push constants, so a decode step's command buffer
// is recorded once per Runner and replayed for every token.

// canFuse reports whether the model's passes can take the fused path:
// llama's block (RMSNorm, SwiGLU, no biases, none of the families' extra
// norms, caps or windows), Q, K and V end to end in one buffer (one
// weight type; so gate and up), contexts that fit attn_fused's shared memory, and a device
// with subgroup arithmetic.
func (r *fwd) canFuse() bool {
	s, W := r.m.Spec, r.m.Weights
	if !r.d.Info.SubgroupArith || s.Norm != model.RMSNorm || s.FFN != model.SwiGLU || W.PosEmbd != nil || r.ctx > maxFusedCtx || W.OutNorm == nil || W.OutNormB != nil || W.OutputB != nil {
		return false
	}
	for _, f := range r.m.Features() { // the fused kernels compute llama's block, NEOX RoPE, a tied output
		if f.Key != "neox-rope" && f.Key != "tied-output" {
			return false
		}
	}
	for i := range W.Layers {
		L := &W.Layers[i]
		if L.QKV != nil || L.Q == nil || L.K == nil || L.V == nil || L.Gate == nil || L.Up == nil || L.AttnNorm == nil || L.FFNNorm == nil {
			return false
		}
		for _, b := range []*model.Tensor{L.AttnNormB, L.FFNNormB, L.QB, L.KB, L.VB, L.OutB, L.GateB, L.UpB, L.DownB} {
			if b != nil {
				return false
			}
		}
		q, k, v, g, u := r.w[L.Q], r.w[L.K], r.w[L.V], r.w[L.Gate], r.w[L.Up]
		if k.b != q.b || v.b != q.b || k.row0 != q.row0+L.Q.Rows() || v.row0 != k.row0+L.K.Rows() || u.b != g.b || u.row0 != g.row0+L.Gate.Rows() {
			return false // not end to end in one buffer (types differ)
		}
	}
	return true
}

// passFused runs tokens through the fused path (no hooks).
func (r *fwd) passFused(tokens []int32, all bool, host []float32) error {
	n, pos0, cur := len(tokens), r.cur.pos, r.cur
	if err := r.writeIDs(tokens); err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(r.posBytes[:], uint32(pos0))
	if err := r.d.write(r.params, 0, r.posBytes[:]); err != nil {
		return err
	}
	rows := 1
	if all {
		rows = n
	}
	if n == 1 && !all { // a decode step: the recorded command buffer
		if cur.rec == nil {
			c, err := r.d.record()
			if err != nil {
				return err
			}
			r.recordFused(c, 1, false)
			if r.logitsHost != nil {
				c.copy(r.logits, r.logitsHost, 0, 0, 4*r.cfg.Vocab)
			}
			if cur.rec, err = c.end(); err != nil {
				return err
			}
		}
		if err := cur.rec.run(); err != nil {
			return err
		}
		r.dispatches = cur.rec.n
		if r.logitsHost != nil { // already copied to the host by the step itself
			if err := r.d.readF32(r.logitsHost, 0, host[:r.cfg.Vocab]); err != nil {
				return err
			}
			cur.pos += n
			return nil
		}
	} else {
		c, err := r.d.Begin()
		if err != nil {
			return err
		}
		r.recordFused(c, n, all)
		if err := c.submit(); err != nil {
			return err
		}
		r.dispatches = c.n
	}
	if err := r.d.readF32(r.logits, 0, host[:rows*r.cfg.Vocab]); err != nil {
		return err
	}
	cur.pos += n
	return nil
}

// recordFused records a fused pass of n tokens at the position in params.
func (r *fwd) recordFused(p *cmd, n int, all bool) {
	c, W := r.cfg, r.m.Weights
	E, QD, KVD, F, V := c.Embd, c.QDim(), c.KVDim(), c.FFN, c.Vocab
	tok := r.w[W.TokEmbd]
	p.getRows(r.set(site{-1, "embed"}, tok.b, r.ids, r.x), tok.typ, E, n, false)
	mode := 0
	if r.m.Spec.Rope == model.RopeNeoX {
		mode = 1
	}
	dims := c.RopeDims
	if r.m.Spec.Rope == model.RopeNone {
		dims = 0
	}
	a := attn{heads: c.Heads, kvHeads: c.KVHeads, headDim: c.HeadDim, n: n, scale: float32(1 / math.Sqrt(float64(c.HeadDim))), qStride: QD, kvDim: KVD, outStride: QD}
	for l := range W.Layers {
		L := &W.Layers[l]
		wo := r.w[L.Out]
		an, fn := r.vec[L.AttnNorm], r.vec[L.FFNNorm]
		r.productNormed(p, l, "f qkv", L.Q, QD+2*KVD, an, r.qkv, n, 0, fuseNorm)
		p.qkvPost(r.set(site{l, "qkv post"}, r.qkv, r.q, r.cur.kc[l], r.cur.vc[l], r.params), a, dims, mode, c.RopeBase)
		p.attnFused(r.set(site{l, "attn fused"}, r.q, r.cur.kc[l], r.cur.vc[l], r.att, r.params), a)
		x := r.roundX(p, l, "f wo", L.Out, r.att, 0, n)
		p.matMulF(r.set(site{l, "f wo"}, wo.b, x, r.x, an), wo.typ, E, QD, n, fused{flags: fuseAdd, row0: wo.row0})
		wd := r.w[L.Down]
		r.productNormed(p, l, "f gateup", L.Gate, F, fn, r.ffA, n, 0, fuseNorm|fuseGated)
		x = r.roundX(p, l, "f down", L.Down, r.ffA, 0, n)
		p.matMulF(r.set(site{l, "f down"}, wd.b, x, r.x, fn), wd.typ, E, F, n, fused{flags: fuseAdd, row0: wd.row0})
	}
	xo := 0
	if !all {
		xo = (n - 1) * E
	}
	r.productNormed(p, -1, "f output", W.OutputMatrix(), V, r.vec[W.OutNorm], r.logits, n, xo, fuseNorm)
}

// productNormed records y = W·RMSNorm(x) for the rows of r.x from float
// xoff on (all n, or the last one), W being t and the rows after it in
// its buffer (rows in all): one fused product with the norm folded in
// (flags fuseNorm, or fuseNorm|fuseGated for gate and up) — or, where the
// CPU rounds the normed vector to 8 bits before multiplying t's rows
// (xBlock), the norm rounded so as it is written, then the product, so
// both backends multiply the same numbers.
func (r *fwd) productNormed(p *cmd, l int, name string, t *model.Tensor, rows int, g, y *buffer, n, xoff, flags int) {
	w, c := r.w[t], r.cfg
	E := c.Embd
	if xBlock(t.Type, t.Cols()) == 0 {
		p.matMulF(r.set(site{l, name}, w.b, r.x, y, g), w.typ, rows, E, (n*E-xoff)/E, fused{flags: flags, row0: w.row0, xOff: xoff, eps: c.NormEps})
		return
	}
	x := r.xr
	p.rmsNormRound(r.set(site{l, name + " norm"}, r.x, g, x), xBlock(t.Type, t.Cols()), xoff/E, (n*E-xoff)/E, E, c.NormEps)
	if flags&fuseGated != 0 {
		p.matMulF(r.set(site{l, name}, w.b, x, y, g), w.typ, rows, E, (n*E-xoff)/E, fused{flags: fuseGated, row0: w.row0})
	} else {
		p.matMul(r.set(site{l, name}, w.b, x, y), w.typ, rows, E, (n*E-xoff)/E, w.row0)
	}
}

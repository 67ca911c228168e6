//go:build cgo

package vulkan

import (
	"encoding/binary"
	"math"
	"time"

	"stepthrough/engine/hooks"
	"stepthrough/engine/intervene"
	"stepthrough/engine/model"
)

// passState records one forward chunk. Without hooks everything goes into
// one command buffer; with hooks, flush submits at stage boundaries and
// reads back what the watching hooks need.
type passState struct {
	r     *fwd
	c     *cmd
	err   error
	start time.Time
	done  int // dispatches submitted by earlier flushes
}

func (p *passState) flush(stage string, layer, pos0, n int, readback func()) {
	if p.err != nil || p.r.h == nil {
		return
	}
	p.done += p.c.n
	if p.err = p.c.submit(); p.err != nil {
		return
	}
	dur := time.Since(p.start)
	// the stage's data first, then its timing, as the CPU reports them
	// (a recorder starts a step at the embedding)
	if readback != nil {
		readback()
	}
	if h := p.r.h; h.OnTiming != nil && stage != "" {
		h.OnTiming(hooks.Timing{Stage: stage, Layer: layer, Pos0: pos0, N: n, Dur: dur})
	}
	p.c, p.err = p.r.d.Begin()
	p.start = time.Now()
}

// readF32 reads n floats of b into a new slice (hook readbacks).
func (p *passState) readF32(b *buffer, off, n int) []float32 {
	out := make([]float32, n)
	if p.err == nil {
		p.err = p.r.d.readF32(b, off, out)
	}
	return out
}

// writeIDs uploads the pass's token ids (at most r.batch of them).
func (r *fwd) writeIDs(tokens []int32) error {
	if cap(r.idBytes) < 4*len(tokens) {
		r.idBytes = make([]byte, 4*r.batch)
	}
	ib := r.idBytes[:4*len(tokens)]
	for i, id := range tokens {
		binary.LittleEndian.PutUint32(ib[4*i:], uint32(id))
	}
	return r.d.write(r.ids, 0, ib)
}

func (r *fwd) pass(tokens []int32, all bool, host []float32) error {
	c, W := r.cfg, r.m.Weights
	n, pos0 := len(tokens), r.cur.pos
	E, V := c.Embd, c.Vocab
	if err := r.writeIDs(tokens); err != nil {
		return err
	}
	if W.PosEmbd != nil { // the positions reuse the ids' bytes, already written
		ib := r.idBytes[:4*n]
		for i := range tokens {
			binary.LittleEndian.PutUint32(ib[4*i:], uint32(pos0+i))
		}
		if err := r.d.write(r.posIDs, 0, ib); err != nil {
			return err
		}
	}
	cmd, err := r.d.Begin()
	if err != nil {
		return err
	}
	p := &passState{r: r, c: cmd, start: time.Now()}
	h := r.h
	watchEmbed := h != nil && h.OnEmbed != nil

	// embed
	tok := r.w[W.TokEmbd]
	p.c.getRows(r.set(site{-1, "embed"}, tok.b, r.ids, r.x), tok.typ, E, n, false)
	var tokRows, posRows []float32
	if W.PosEmbd != nil {
		if watchEmbed {
			p.flush("", -1, pos0, n, func() { tokRows = p.readF32(r.x, 0, n*E) })
		}
		pe := r.w[W.PosEmbd]
		p.c.getRows(r.set(site{-1, "pos"}, pe.b, r.posIDs, r.o), pe.typ, E, n, false)
		p.c.add(r.set(site{-1, "x+o"}, r.x, r.o), n*E, n*E)
	}
	if r.m.Spec.EmbedScale {
		if watchEmbed {
			p.flush("", -1, pos0, n, func() { tokRows = p.readF32(r.x, 0, n*E) })
		}
		p.c.scale(r.set(site{-1, "embed scale"}, r.x), n*E, float32(math.Sqrt(float64(E))))
	}
	if watchEmbed {
		p.flush("embed", -1, pos0, n, func() {
			in := p.readF32(r.x, 0, n*E)
			ev := hooks.Embed{Pos0: pos0, N: n, Embd: E, Tokens: tokens, TokenRows: in, Input: in}
			if W.PosEmbd != nil {
				posRows = p.readF32(r.o, 0, n*E)
				ev.TokenRows, ev.PosRows = tokRows, posRows
			}
			if r.m.Spec.EmbedScale {
				ev.TokenRows = tokRows
			}
			h.OnEmbed(ev)
		})
	}
	for l := range W.Layers {
		r.layer(p, l, n, pos0)
	}
	// final norm over the rows wanted, then the output projection
	r.norm(p, -1, "output norm", r.vec[W.OutNorm], r.vec[W.OutNormB], n)
	rows, first := n, 0
	src := r.xn
	if !all {
		rows, first = 1, n-1
		p.c.copyRows(r.set(site{-1, "last"}, r.xn, r.last), E, 1, (n-1)*E, E, 0, E)
		src = r.last
	}
	out := r.w[W.OutputMatrix()]
	name := "output last"
	if all {
		name = "output all"
	}
	src = r.roundX(p.c, -1, name, W.OutputMatrix(), src, 0, rows)
	p.c.matMul(r.set(site{-1, name}, out.b, src, r.logits), out.typ, V, E, rows, out.row0)
	r.bias(p, -1, name, r.logits, r.vec[W.OutputB], rows, V)
	if c.FinalSoftcap != 0 {
		p.c.softcap(r.set(site{-1, "final softcap"}, r.logits), rows*V, c.FinalSoftcap)
	}
	if p.err != nil {
		return p.err
	}
	r.dispatches = p.done + p.c.n
	if err := p.c.submit(); err != nil {
		return err
	}
	if err := r.d.readF32(r.logits, 0, host[:rows*V]); err != nil {
		return err
	}
	if h != nil && h.OnTiming != nil {
		h.OnTiming(hooks.Timing{Stage: "output", Layer: -1, Pos0: pos0, N: n, Dur: time.Since(p.start)})
	}
	if h != nil && h.OnLogits != nil {
		h.OnLogits(hooks.Logits{First: pos0 + first, Rows: rows, Vocab: V, Logits: host[:rows*V]})
	}
	r.cur.pos += n
	return nil
}

// norm writes norm(x) into xn for n rows (RMSNorm or LayerNorm).
func (r *fwd) norm(p *passState, l int, name string, w, b *buffer, n int) {
	c := r.cfg
	if r.m.Spec.Norm == model.LayerNorm {
		p.c.layerNorm(r.set(site{l, name}, r.x, w, b, r.xn), n, c.Embd, c.NormEps)
	} else {
		p.c.rmsNorm(r.set(site{l, name}, r.x, w, r.xn), n, c.Embd, c.NormEps)
	}
}

func (r *fwd) bias(p *passState, l int, name string, dst *buffer, bias *buffer, n, width int) {
	if bias != nil {
		p.c.add(r.set(site{l, "bias " + name}, dst, bias), n*width, width)
	}
}

func (r *fwd) matmul(p *passState, l int, name string, t *model.Tensor, x, y *buffer, n int) {
	w := r.w[t]
	x = r.roundX(p.c, l, name, t, x, 0, n)
	p.c.matMul(r.set(site{l, name}, w.b, x, y), w.typ, t.Rows(), t.Cols(), n, w.row0)
}

// roundX returns the buffer a product with t reads: x itself, or, where
// the CPU rounds the vector to 8 bits for t's rows (xBlock), n rows of x
// from float xoff on rounded the same way into r.xr.
func (r *fwd) roundX(c *cmd, l int, name string, t *model.Tensor, x *buffer, xoff, n int) *buffer {
	qk := xBlock(t.Type, t.Cols())
	if qk == 0 {
		return x
	}
	c.roundX(r.set(site{l, "round " + name}, x, r.xr), qk, n*t.Cols(), xoff)
	return r.xr
}

func (r *fwd) layer(p *passState, l, n, pos0 int) {
	c, L, h := r.cfg, &r.m.Weights.Layers[l], r.h
	E, QD, KVD, HD := c.Embd, c.QDim(), c.KVDim(), c.HeadDim
	vec := func(t *model.Tensor) *buffer { return r.vec[t] }
	r.norm(p, l, "attn norm", vec(L.AttnNorm), vec(L.AttnNormB), n)
	if L.QKV != nil {
		W := QD + 2*KVD
		r.matmul(p, l, "qkv", L.QKV, r.xn, r.qkv, n)
		r.bias(p, l, "qkv", r.qkv, vec(L.QKVB), n, W)
		p.c.copyRows(r.set(site{l, "split q"}, r.qkv, r.q), QD, n, 0, W, 0, QD)
		p.c.copyRows(r.set(site{l, "split k"}, r.qkv, r.k), KVD, n, QD, W, 0, KVD)
		p.c.copyRows(r.set(site{l, "split v"}, r.qkv, r.v), KVD, n, QD+KVD, W, 0, KVD)
	} else {
		r.matmul(p, l, "q", L.Q, r.xn, r.q, n)
		r.matmul(p, l, "k", L.K, r.xn, r.k, n)
		r.matmul(p, l, "v", L.V, r.xn, r.v, n)
		r.bias(p, l, "q", r.q, vec(L.QB), n, QD)
		r.bias(p, l, "k", r.k, vec(L.KB), n, KVD)
		r.bias(p, l, "v", r.v, vec(L.VB), n, KVD)
	}
	if L.QNorm != nil { // each head's RMS norm: rows of one head
		p.c.rmsNorm(r.set(site{l, "q norm"}, r.q, vec(L.QNorm), r.q), n*c.Heads, HD, c.NormEps)
		p.c.rmsNorm(r.set(site{l, "k norm"}, r.k, vec(L.KNorm), r.k), n*c.KVHeads, HD, c.NormEps)
	}
	if r.m.Spec.Rope != model.RopeNone {
		mode := 0
		if r.m.Spec.Rope == model.RopeNeoX {
			mode = 1
		}
		factors := r.ropeF != r.params // params stands in when there are none
		p.c.rope(r.set(site{l, "rope q"}, r.q, r.ropeF), c.Heads, HD, c.RopeDims, pos0, n, c.RopeFor(l), factors, mode, QD)
		p.c.rope(r.set(site{l, "rope k"}, r.k, r.ropeF), c.KVHeads, HD, c.RopeDims, pos0, n, c.RopeFor(l), factors, mode, KVD)
	}
	// KV-cache append
	p.c.copyRows(r.set(site{l, "kv k"}, r.k, r.cur.kc[l]), KVD, n, 0, KVD, pos0*KVD, KVD)
	p.c.copyRows(r.set(site{l, "kv v"}, r.v, r.cur.vc[l]), KVD, n, 0, KVD, pos0*KVD, KVD)
	if h != nil && h.OnKVAppend != nil {
		p.flush("", l, pos0, n, func() {
			h.OnKVAppend(hooks.KVAppend{Layer: l, Pos0: pos0, N: n, K: p.readF32(r.k, 0, n*KVD), V: p.readF32(r.v, 0, n*KVD),
				Len: pos0 + n, Capacity: r.cur.ctx, BytesUsed: (pos0 + n) * c.Layers * KVD * 8, BytesAllocated: r.cur.ctx * c.Layers * KVD * 8})
		})
	}
	ctx := pos0 + n
	a := attn{heads: c.Heads, kvHeads: c.KVHeads, headDim: HD, ctx: ctx, pos0: pos0, n: n, scale: c.AttnScale, qStride: QD, kvDim: KVD, outStride: QD}
	if c.IsLocal(l) {
		a.window = c.Window
	}
	p.c.attnScores(r.set(site{l, "scores"}, r.q, r.cur.kc[l], r.scores), a)
	if c.AttnSoftcap != 0 {
		p.c.softcap(r.set(site{l, "scores cap"}, r.scores), n*c.Heads*ctx, c.AttnSoftcap)
	}
	watchAttn := h != nil && h.OnAttention != nil
	if watchAttn {
		p.c.copyRows(r.set(site{l, "scores copy"}, r.scores, r.scores2), n*c.Heads*ctx, 1, 0, 0, 0, 0)
	}
	p.c.softmax(r.set(site{l, "softmax"}, r.scores), ctx, n*c.Heads)
	p.c.attnOut(r.set(site{l, "attn out"}, r.scores, r.cur.vc[l], r.att), a)
	r.edit(p, l, intervene.Head, r.att, QD, n, pos0)
	r.matmul(p, l, "wo", L.Out, r.att, r.o, n)
	r.bias(p, l, "wo", r.o, vec(L.OutB), n, E)
	if L.PostNorm != nil {
		p.c.rmsNorm(r.set(site{l, "attn post norm"}, r.o, vec(L.PostNorm), r.o), n, E, c.NormEps)
	}
	r.edit(p, l, intervene.Attn, r.o, E, n, pos0)
	if watchAttn {
		p.flush("", l, pos0, n, func() {
			h.OnAttention(hooks.Attention{Layer: l, Pos0: pos0, N: n, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: HD, Ctx: ctx, Scale: a.scale,
				Normed: p.readF32(r.xn, 0, n*E), Q: p.readF32(r.q, 0, n*QD), K: p.readF32(r.k, 0, n*KVD), V: p.readF32(r.v, 0, n*KVD),
				Scores: p.readF32(r.scores2, 0, n*c.Heads*ctx), Weights: p.readF32(r.scores, 0, n*c.Heads*ctx),
				Context: p.readF32(r.att, 0, n*QD), Out: p.readF32(r.o, 0, n*E)})
		})
	}
	p.c.add(r.set(site{l, "resid attn"}, r.x, r.o), n*E, n*E)
	p.flush("attention", l, pos0, n, r.residual(p, l, n, pos0, "attention"))

	r.norm(p, l, "ffn norm", vec(L.FFNNorm), vec(L.FFNNormB), n)
	F := c.FFN
	watchMLP := h != nil && h.OnMLP != nil
	ev := hooks.MLP{Layer: l, Pos0: pos0, N: n}
	if fk := r.m.Spec.FFN; fk != model.GELU {
		if L.Gate != nil {
			r.matmul(p, l, "gate", L.Gate, r.xn, r.ffA, n)
			r.matmul(p, l, "up", L.Up, r.xn, r.ffB, n)
			r.bias(p, l, "gate", r.ffA, vec(L.GateB), n, F)
			r.bias(p, l, "up", r.ffB, vec(L.UpB), n, F)
		} else { // one product of 2×FFN rows: [gate | up]
			r.matmul(p, l, "gate up", L.Up, r.xn, r.ffUp, n)
			p.c.copyRows(r.set(site{l, "split gate"}, r.ffUp, r.ffA), F, n, 0, 2*F, 0, F)
			p.c.copyRows(r.set(site{l, "split up"}, r.ffUp, r.ffB), F, n, F, 2*F, 0, F)
		}
		if watchMLP {
			p.c.copyRows(r.set(site{l, "gate copy"}, r.ffA, r.gate), n*F, 1, 0, 0, 0, 0)
			ev.Kind = "swiglu"
		}
		if fk == model.GeGLU {
			ev.Kind = "geglu"
			p.c.geGLU(r.set(site{l, "geglu"}, r.ffA, r.ffB), n*F)
		} else {
			p.c.swiGLU(r.set(site{l, "swiglu"}, r.ffA, r.ffB), n*F)
		}
	} else {
		r.matmul(p, l, "up", L.Up, r.xn, r.ffA, n)
		r.bias(p, l, "up", r.ffA, vec(L.UpB), n, F)
		if watchMLP {
			p.c.copyRows(r.set(site{l, "up copy"}, r.ffA, r.gate), n*F, 1, 0, 0, 0, 0)
			ev.Kind = "gelu"
		}
		p.c.gelu(r.set(site{l, "gelu"}, r.ffA), n*F)
	}
	r.edit(p, l, intervene.Unit, r.ffA, F, n, pos0)
	r.matmul(p, l, "down", L.Down, r.ffA, r.o, n)
	r.bias(p, l, "down", r.o, vec(L.DownB), n, E)
	if L.FFNPost != nil {
		p.c.rmsNorm(r.set(site{l, "mlp post norm"}, r.o, vec(L.FFNPost), r.o), n, E, c.NormEps)
	}
	r.edit(p, l, intervene.MLP, r.o, E, n, pos0)
	if watchMLP {
		p.flush("", l, pos0, n, func() {
			ev.Normed, ev.Act, ev.Out = p.readF32(r.xn, 0, n*E), p.readF32(r.ffA, 0, n*F), p.readF32(r.o, 0, n*E)
			if ev.Kind != "gelu" {
				ev.Gate, ev.Up = p.readF32(r.gate, 0, n*F), p.readF32(r.ffB, 0, n*F)
			} else {
				ev.Up = p.readF32(r.gate, 0, n*F)
			}
			h.OnMLP(ev)
		})
	}
	p.c.add(r.set(site{l, "resid mlp"}, r.x, r.o), n*E, n*E)
	r.edit(p, l, intervene.Resid, r.x, E, n, pos0)
	p.flush("mlp", l, pos0, n, r.residual(p, l, n, pos0, "mlp"))
	if h != nil && h.OnLens != nil {
		r.lens(p, l, n, pos0)
	}
}

// residual returns the readback for the residual hook, or nil.
func (r *fwd) residual(p *passState, l, n, pos0 int, after string) func() {
	h := r.h
	if h == nil || h.OnResidual == nil {
		return nil
	}
	return func() {
		E := r.cfg.Embd
		x := p.readF32(r.x, 0, n*E)
		norms := make([]float32, n)
		for t := range norms {
			var ss float64
			for _, v := range x[t*E : (t+1)*E] {
				ss += float64(v) * float64(v)
			}
			norms[t] = float32(math.Sqrt(ss))
		}
		h.OnResidual(hooks.Residual{Layer: l, Pos0: pos0, N: n, After: after, X: x, Norms: norms})
	}
}

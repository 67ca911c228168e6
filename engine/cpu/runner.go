package cpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"

	"stepthrough/engine/hooks"
	"stepthrough/engine/intervene"
	"stepthrough/engine/kv"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// Options configure a Loaded model (and NewRunner's private one).
type Options struct {
	// Threads is the worker count: 0 means DefaultThreads (one per core);
	// more than GOMAXPROCS are lowered to it, since goroutines beyond the
	// CPUs Go runs at once would only take turns.
	Threads  int
	Context  int // the most KV-cache positions a Runner may hold; 0: the model's context length, at most 2048
	MaxBatch int // tokens per forward chunk; 0: 512
}

// fwd computes forward passes of one model on the CPU. It is the shared
// part of a Loaded model: one at a time, over the KV cache and logits
// buffer of the Runner whose pass it is.
type fwd struct {
	m     *model.Model
	cfg   *model.Config
	pool  *Pool
	cache kv.Store // the current pass's Runner's
	batch int
	ctx   int // the most positions any Runner may hold

	// activations, sized for a full batch
	x, xn, q, k, v, att, o, ffA, ffB []float32
	logits                           []float32 // the current pass's Runner's last-position logits
	scratch                          [][]float32
	scores                           [][]float32
	attn                             attnTask
	act                              actTask
	rowOp                            rowTask
	outs3                            [3][]float32 // MatMuls' arguments, kept so they do not escape per call
	ws3                              [3]*model.Tensor
	ropeTab, ropeTabL                []float32 // per row of the chunk: its rotation table (cos, sin pairs) for global and (when they differ) local layers
	ropeFactors                      []float32 // RoPE frequency factors (nil: none)
	ffUp                             []float32 // a fused gate-up product (SwiGLUFused), 2×FFN a row
	tiles                            attnTiles
	tileS, tileV                     [][]float32 // per worker: a tile's scores and its head's values transposed
	rowSums                          [][]float32 // per worker: eight positions' sums for every head (scoreRows8)

	norms []layerVecs
	outN  vecs
	outB  []float32 // the logits' bias (output.bias), or nil

	h  *hooks.Hooks   // the current forward pass's hooks, or nil
	iv *intervene.Set // the current forward pass's runner's edits, or nil
	hk hookBufs       // extra copies made only while a hook listens

	// the current chunk's sequences: one for a Runner's pass, several for
	// a batched one (ForwardBatch); per row, its position and sequence
	segs           []seg
	rowPos, rowSeg []int
	outRows        []int     // rows whose logits the chunk computes
	outBuf         []float32 // a batched pass's logits before they go to each sequence
}

// seg is one sequence's rows in a chunk: rows [row0, row0+n) of the
// activations are its positions [pos0, pos0+n), over its own cache.
type seg struct {
	cache         kv.Store
	row0, pos0, n int
	want          bool // compute logits (the last row's, or every row's when all)
	all           bool
	out           []float32 // where the logits go: 1×vocab, or n×vocab when all
}

// hookBufs hold values the forward pass would otherwise overwrite or never
// materialise. They are allocated on first use.
type hookBufs struct {
	tokens           []int32
	tokRows, posRows []float32
	scores, weights  []float32
	gate, up         []float32
	norms            []float32
	lensIn, lens     []float32
}

// hookKeep is the most values a hook buffer keeps from one pass to the
// next: a larger one (a lens over a huge vocabulary, a long prompt's
// attention scores) goes when its pass ends, so a model every session
// shares does not hold one pass's peak for good.
const hookKeep = 1 << 20

func (b *hookBufs) trim() {
	for _, p := range []*[]float32{&b.tokRows, &b.posRows, &b.scores, &b.weights, &b.gate, &b.up, &b.norms, &b.lensIn, &b.lens} {
		if cap(*p) > hookKeep {
			*p = nil
		}
	}
}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

type vecs struct{ w, b []float32 }

type layerVecs struct {
	attnNorm, ffnNorm, attnPost, ffnPost    vecs
	qb, kb, vb, qkvb, ob, gateb, upb, downb []float32
	qNorm, kNorm                            []float32 // per head dimension (QKNorm)
}

// newFwd prepares the activation buffers and decoded vectors for m.
func newFwd(m *model.Model, opt Options) (*fwd, error) {
	c := m.Config
	ctx := opt.Context
	if ctx <= 0 {
		ctx = min(c.ContextLen, 2048)
	}
	if m.Spec.PosEmbd && ctx > c.ContextLen {
		return nil, fmt.Errorf("context %d exceeds the model's %d learned positions", ctx, c.ContextLen)
	}
	batch := opt.MaxBatch
	if batch <= 0 {
		batch = 512
	}
	batch = min(batch, ctx)
	if b := int64(c.Layers) * int64(ctx) * int64(c.KVDim()) * 8; b > kv.MaxBytes {
		return nil, fmt.Errorf("context %d: a KV cache of %d layers × %d positions × %d values needs %d MiB, over the %d MiB limit", ctx, c.Layers, ctx, c.KVDim(), b>>20, kv.MaxBytes>>20)
	}
	pool := NewPool(min(opt.Threads, runtime.GOMAXPROCS(0)))
	r := &fwd{m: m, cfg: c, pool: pool, batch: batch, ctx: ctx}
	widest := max(c.Embd, c.QDim(), c.FFN)
	r.x = make([]float32, batch*c.Embd)
	r.xn = make([]float32, batch*c.Embd)
	r.q = make([]float32, batch*(c.QDim()+2*c.KVDim()))
	r.k = make([]float32, batch*c.KVDim())
	r.v = make([]float32, batch*c.KVDim())
	r.att = make([]float32, batch*c.QDim())
	r.o = make([]float32, batch*c.Embd)
	r.ffA = make([]float32, batch*c.FFN)
	r.ffB = make([]float32, batch*c.FFN)
	r.ropeTab = make([]float32, batch*c.RopeDims)
	if c.Local != nil && c.RopeLocal != c.Rope {
		r.ropeTabL = make([]float32, batch*c.RopeDims)
	}
	r.ropeFactors = decodeVec(m.Weights.RopeFactors(c, ctx))
	if m.Spec.FFN == model.SwiGLUFused {
		r.ffUp = make([]float32, batch*2*c.FFN)
	}
	r.rowPos, r.rowSeg = make([]int, 0, batch), make([]int, 0, batch)
	r.outRows = make([]int, 0, batch)
	for w := 0; w < pool.Threads(); w++ {
		r.scratch = append(r.scratch, make([]float32, ScratchFloats(widest)))
		r.scores = append(r.scores, make([]float32, max(ctx, min(c.Heads*ctx, attnScoreFloats))))
		r.tileS = append(r.tileS, make([]float32, tileRows*ctx))
		r.tileV = append(r.tileV, make([]float32, c.HeadDim*max(ctx, tileRows+8)))
		r.rowSums = append(r.rowSums, make([]float32, 64*c.Heads))
	}
	W := m.Weights
	r.outN = vecs{decodeVec(W.OutNorm), decodeVec(W.OutNormB)}
	r.outB = decodeVec(W.OutputB)
	for i := range W.Layers {
		L := &W.Layers[i]
		r.norms = append(r.norms, layerVecs{
			attnNorm: vecs{decodeVec(L.AttnNorm), decodeVec(L.AttnNormB)},
			ffnNorm:  vecs{decodeVec(L.FFNNorm), decodeVec(L.FFNNormB)},
			attnPost: vecs{w: decodeVec(L.PostNorm)}, ffnPost: vecs{w: decodeVec(L.FFNPost)},
			qNorm: decodeVec(L.QNorm), kNorm: decodeVec(L.KNorm),
			qb: decodeVec(L.QB), kb: decodeVec(L.KB), vb: decodeVec(L.VB), qkvb: decodeVec(L.QKVB),
			ob: decodeVec(L.OutB), gateb: decodeVec(L.GateB), upb: decodeVec(L.UpB), downb: decodeVec(L.DownB),
		})
	}
	return r, nil
}

func decodeVec(t *model.Tensor) []float32 {
	if t == nil {
		return nil
	}
	out := make([]float32, t.Cols()*t.Rows())
	quant.Dequantize(t.Type, t.Data, out)
	return out
}

// pos is the number of positions in the current pass's cache.
func (r *fwd) pos() int { return r.cache.Len() }

// forward runs tokens at the cache's next positions (see Runner.Forward).
func (r *fwd) forward(ctx context.Context, tokens []int32, all bool) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, errors.New("forward: no tokens")
	}
	if r.pos()+len(tokens) > r.cache.Cap() {
		return nil, fmt.Errorf("forward: %d tokens at position %d: %w (%d positions)", len(tokens), r.pos(), kv.ErrContextFull, r.cache.Cap())
	}
	if err := r.cache.Reserve(r.pos() + len(tokens)); err != nil {
		r.cache.Truncate(r.pos())
		return nil, err
	}
	for i, id := range tokens {
		if id < 0 || int(id) >= r.cfg.Vocab {
			return nil, fmt.Errorf("forward: token %d (at %d) is outside the vocabulary of %d", id, i, r.cfg.Vocab)
		}
	}
	var out []float32
	if all {
		out = make([]float32, len(tokens)*r.cfg.Vocab)
	}
	r.h = hooks.From(ctx)
	defer func() {
		r.h = nil
		r.hk.trim()
	}()
	for start := 0; start < len(tokens); start += r.batch {
		if err := ctx.Err(); err != nil { // a pass, or a long prompt's next chunk, is not computed for a caller that has gone
			return nil, err
		}
		chunk := tokens[start:min(len(tokens), start+r.batch)]
		var dst []float32
		if all {
			dst = out[start*r.cfg.Vocab : (start+len(chunk))*r.cfg.Vocab]
		}
		r.forwardChunk(chunk, dst, start+len(chunk) == len(tokens))
	}
	if all {
		return out, nil
	}
	return r.logits, nil
}

func (r *fwd) forwardChunk(tokens []int32, allOut []float32, last bool) {
	s := seg{cache: r.cache, pos0: r.pos(), n: len(tokens), want: last || allOut != nil, all: allOut != nil, out: allOut}
	if s.out == nil {
		s.out = r.logits
	}
	r.segs = append(r.segs[:0], s)
	r.run(tokens)
	r.dropSegs()
}

// dropSegs forgets the chunk's sequences: the segments' caches and logits
// are their runners', and the Loaded outlives them (a registry keeps it),
// so a segment left in the buffer would keep a finished run's KV cache.
func (r *fwd) dropSegs() {
	clear(r.segs)
	r.segs = r.segs[:0]
}

// run computes the chunk r.segs describes; tokens are its rows in order.
func (r *fwd) run(tokens []int32) {
	c, W := r.cfg, r.m.Weights
	n, pos0, E := len(tokens), r.segs[0].pos0, c.Embd // pos0: the hooks' (one sequence)
	h := r.h
	r.rowPos, r.rowSeg = r.rowPos[:0], r.rowSeg[:0]
	for i, s := range r.segs {
		for t := 0; t < s.n; t++ {
			r.rowPos, r.rowSeg = append(r.rowPos, s.pos0+t), append(r.rowSeg, i)
		}
	}
	start := r.now()
	x := r.x[:n*E]
	watchEmbed := h != nil && h.OnEmbed != nil && W.PosEmbd != nil
	if watchEmbed {
		r.hk.tokRows, r.hk.posRows = grow(r.hk.tokRows, n*E), grow(r.hk.posRows, n*E)
	}
	for t, id := range tokens {
		RowF32(W.TokEmbd, int(id), x[t*E:(t+1)*E])
		if W.PosEmbd != nil {
			row := r.scratch[0][:E]
			RowF32(W.PosEmbd, r.rowPos[t], row)
			if watchEmbed {
				copy(r.hk.tokRows[t*E:], x[t*E:(t+1)*E])
				copy(r.hk.posRows[t*E:], row)
			}
			add(x[t*E:(t+1)*E], row)
		}
	}
	var tokRows []float32 // the rows as looked up, when they are then scaled
	if r.m.Spec.EmbedScale {
		if h != nil && h.OnEmbed != nil {
			r.hk.tokRows = append(r.hk.tokRows[:0], x...)
			tokRows = r.hk.tokRows
		}
		scale(x, float32(math.Sqrt(float64(E)))) // gemma: ×√width (sqrtf, as ggml)
	}
	if h != nil && h.OnEmbed != nil {
		r.hk.tokens = append(r.hk.tokens[:0], tokens...) // a copy, so callers' token slices do not escape
		ev := hooks.Embed{Pos0: pos0, N: n, Embd: E, Tokens: r.hk.tokens, TokenRows: x, Input: x}
		if W.PosEmbd != nil {
			ev.TokenRows, ev.PosRows = r.hk.tokRows[:n*E], r.hk.posRows[:n*E]
		}
		if tokRows != nil {
			ev.TokenRows = tokRows
		}
		h.OnEmbed(ev)
	}
	r.timing("embed", -1, pos0, n, start)
	run := 0
	for _, s := range r.segs {
		run = max(run, s.n)
	}
	r.pool.SetRun(run)
	defer r.pool.SetRun(0)
	for l := range W.Layers {
		r.layer(l, n, pos0)
	}
	for _, s := range r.segs {
		s.cache.SetLen(s.pos0 + s.n)
	}
	start = r.now()
	defer r.timing("output", -1, pos0, n, start)
	r.output(x)
}

// output computes the logits the chunk's sequences want: the final norm
// and the output projection of those rows, in one product for all of them.
func (r *fwd) output(x []float32) {
	c, W, E := r.cfg, r.m.Weights, r.cfg.Embd
	r.outRows = r.outRows[:0]
	run := 1
	for _, s := range r.segs {
		switch {
		case s.all:
			for t := 0; t < s.n; t++ {
				r.outRows = append(r.outRows, s.row0+t)
			}
			run = max(run, s.n)
		case s.want:
			r.outRows = append(r.outRows, s.row0+s.n-1)
		}
	}
	r.pool.SetRun(run)
	rows := len(r.outRows)
	if rows == 0 {
		return
	}
	xn := r.xn[:rows*E]
	for i, t := range r.outRows {
		r.norm(xn[i*E:(i+1)*E], x[t*E:(t+1)*E], r.outN)
	}
	var dst []float32
	if len(r.segs) == 1 {
		dst = r.segs[0].out
	} else {
		r.outBuf = grow(r.outBuf, rows*c.Vocab)
		dst = r.outBuf
	}
	r.pool.MatMul(dst, W.OutputMatrix(), xn, rows, r.scratch)
	addBias(dst, r.outB, rows)
	if c.FinalSoftcap != 0 {
		softcap(dst[:rows*c.Vocab], c.FinalSoftcap)
	}
	if h := r.h; h != nil && h.OnLogits != nil {
		h.OnLogits(hooks.Logits{First: r.rowPos[r.outRows[0]], Rows: rows, Vocab: c.Vocab, Logits: dst[:rows*c.Vocab]})
	}
	if len(r.segs) == 1 {
		return
	}
	i := 0
	for _, s := range r.segs {
		k := 0
		switch {
		case s.all:
			k = s.n
		case s.want:
			k = 1
		}
		copy(s.out, dst[i*c.Vocab:(i+k)*c.Vocab])
		i += k
	}
}

// lens projects the residual stream after layer l through the final norm
// and the output matrix, for the logit-lens hook: the chunk's last
// LensRows rows (all when 0).
func (r *fwd) lens(l, n, pos0 int) {
	if r.h == nil || r.h.OnLens == nil {
		return
	}
	c, E := r.cfg, r.cfg.Embd
	first := 0
	if k := r.h.LensRows; k > 0 && k < n {
		first = n - k
	}
	rows := n - first
	r.hk.lensIn, r.hk.lens = grow(r.hk.lensIn, rows*E), grow(r.hk.lens, rows*c.Vocab)
	in, out := r.hk.lensIn[:rows*E], r.hk.lens[:rows*c.Vocab]
	for t := range rows {
		r.norm(in[t*E:(t+1)*E], r.x[(first+t)*E:(first+t+1)*E], r.outN)
	}
	r.pool.MatMul(out, r.m.Weights.OutputMatrix(), in, rows, r.scratch)
	addBias(out, r.outB, rows)
	if c.FinalSoftcap != 0 {
		softcap(out, c.FinalSoftcap)
	}
	r.h.OnLens(hooks.Lens{Layer: l, Pos0: pos0 + first, N: rows, Vocab: c.Vocab, Logits: out})
}

// now reads the clock only when a timing hook listens.
func (r *fwd) now() time.Time {
	if r.h == nil || r.h.OnTiming == nil {
		return time.Time{}
	}
	return time.Now()
}

func (r *fwd) timing(stage string, layer, pos0, n int, start time.Time) {
	if r.h != nil && r.h.OnTiming != nil {
		r.h.OnTiming(hooks.Timing{Stage: stage, Layer: layer, Pos0: pos0, N: n, Dur: time.Since(start)})
	}
}

// residual reports the residual stream after a block.
func (r *fwd) residual(l, n, pos0 int, after string) {
	if r.h == nil || r.h.OnResidual == nil {
		return
	}
	E := r.cfg.Embd
	r.hk.norms = grow(r.hk.norms, n)
	for t := 0; t < n; t++ {
		var ss float64
		for _, v := range r.x[t*E : (t+1)*E] {
			ss += float64(v) * float64(v)
		}
		r.hk.norms[t] = float32(math.Sqrt(ss))
	}
	r.h.OnResidual(hooks.Residual{Layer: l, Pos0: pos0, N: n, After: after, X: r.x[:n*E], Norms: r.hk.norms})
}

func (r *fwd) norm(out, x []float32, v vecs) {
	if r.m.Spec.Norm == model.LayerNorm {
		LayerNorm(out, x, v.w, v.b, r.cfg.NormEps)
	} else {
		RMSNorm(out, x, v.w, r.cfg.NormEps)
	}
}

func (r *fwd) layer(l, n, pos0 int) {
	c, L, nv, h := r.cfg, &r.m.Weights.Layers[l], &r.norms[l], r.h
	start := r.now()
	E, QD, KVD, HD := c.Embd, c.QDim(), c.KVDim(), c.HeadDim
	x, xn := r.x[:n*E], r.xn[:n*E]
	r.rows(n, E, rowTask{op: rowNorm, x: x, out: xn, v: &nv.attnNorm})
	q, k, v := r.q[:n*QD], r.k[:n*KVD], r.v[:n*KVD]
	if L.QKV != nil {
		qkv := r.q[:n*(QD+2*KVD)]
		r.pool.MatMul(qkv, L.QKV, xn, n, r.scratch)
		addBias(qkv, nv.qkvb, n)
		// split rows [q|k|v] into the three buffers (q compacts in place)
		for t := 0; t < n; t++ {
			row := qkv[t*(QD+2*KVD):]
			copy(k[t*KVD:(t+1)*KVD], row[QD:QD+KVD])
			copy(v[t*KVD:(t+1)*KVD], row[QD+KVD:QD+2*KVD])
			copy(q[t*QD:(t+1)*QD], row[:QD])
		}
	} else {
		r.outs3, r.ws3 = [3][]float32{q, k, v}, [3]*model.Tensor{L.Q, L.K, L.V}
		r.pool.MatMuls(r.outs3[:], r.ws3[:], xn, n, r.scratch)
		addBias(q, nv.qb, n)
		addBias(k, nv.kb, n)
		addBias(v, nv.vb, n)
	}
	if r.m.Spec.Rope != model.RopeNone {
		if l == 0 { // the rows' angles, for every layer of the chunk
			r.rows(n, 4*c.RopeDims, rowTask{op: rowTable})
		}
		r.rows(n, QD+KVD, rowTask{op: rowRope, l: l})
	}
	for t := 0; t < n; t++ {
		r.segs[r.rowSeg[t]].cache.Put(l, r.rowPos[t], k[t*KVD:(t+1)*KVD], v[t*KVD:(t+1)*KVD])
	}
	if h != nil && h.OnKVAppend != nil {
		cache := r.segs[0].cache
		used := (pos0 + n) * c.Layers * KVD * 8
		h.OnKVAppend(hooks.KVAppend{Layer: l, Pos0: pos0, N: n, K: k, V: v, Len: pos0 + n, Capacity: cache.Cap(),
			BytesUsed: used, BytesAllocated: cache.BytesAllocated()})
	}
	r.attention(l, n, pos0)
	r.edit(l, intervene.Head, r.att[:n*QD], QD)
	o := r.o[:n*E]
	r.pool.MatMul(o, L.Out, r.att[:n*QD], n, r.scratch)
	addBias(o, nv.ob, n)
	if h != nil && h.OnAttention != nil {
		h.OnAttention(hooks.Attention{Layer: l, Pos0: pos0, N: n, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: HD,
			Ctx: pos0 + n, Scale: c.AttnScale, Normed: xn, Q: q, K: k, V: v,
			Scores: r.hk.scores, Weights: r.hk.weights, Context: r.att[:n*QD], Out: o})
	}
	if nv.attnPost.w != nil {
		r.rows(n, E, rowTask{op: rowNorm, x: o, out: o, v: &nv.attnPost})
	}
	r.edit(l, intervene.Attn, o, E)
	add(x, o)
	r.timing("attention", l, pos0, n, start)
	r.residual(l, n, pos0, "attention")
	start = r.now()

	r.rows(n, E, rowTask{op: rowNorm, x: x, out: xn, v: &nv.ffnNorm})
	F := c.FFN
	a, b := r.ffA[:n*F], r.ffB[:n*F]
	watch := h != nil && h.OnMLP != nil
	ev := hooks.MLP{Layer: l, Pos0: pos0, N: n, Normed: xn}
	switch r.m.Spec.FFN {
	case model.SwiGLU, model.GeGLU, model.SwiGLUFused:
		if L.Gate != nil {
			r.outs3, r.ws3 = [3][]float32{a, b}, [3]*model.Tensor{L.Gate, L.Up}
			r.pool.MatMuls(r.outs3[:2], r.ws3[:2], xn, n, r.scratch)
			addBias(a, nv.gateb, n)
			addBias(b, nv.upb, n)
		} else { // one product of 2×FFN rows: [gate | up]
			up := r.ffUp[:n*2*F]
			r.pool.MatMul(up, L.Up, xn, n, r.scratch)
			for t := 0; t < n; t++ {
				copy(a[t*F:(t+1)*F], up[t*2*F:t*2*F+F])
				copy(b[t*F:(t+1)*F], up[t*2*F+F:(t+1)*2*F])
			}
		}
		if watch {
			r.hk.gate = append(r.hk.gate[:0], a...)
			ev.Kind, ev.Gate, ev.Up = "swiglu", r.hk.gate, b
			if r.m.Spec.FFN == model.GeGLU {
				ev.Kind = "geglu"
			}
		}
		r.activate(a, b)
	default:
		r.pool.MatMul(a, L.Up, xn, n, r.scratch)
		addBias(a, nv.upb, n)
		if watch {
			r.hk.up = append(r.hk.up[:0], a...)
			ev.Kind, ev.Up = "gelu", r.hk.up
		}
		r.activate(a, nil)
	}
	r.edit(l, intervene.Unit, a, F)
	r.pool.MatMul(o, L.Down, a, n, r.scratch)
	addBias(o, nv.downb, n)
	if nv.ffnPost.w != nil {
		r.rows(n, E, rowTask{op: rowNorm, x: o, out: o, v: &nv.ffnPost})
	}
	r.edit(l, intervene.MLP, o, E)
	if watch {
		ev.Act, ev.Out = a, o
		h.OnMLP(ev)
	}
	add(x, o)
	r.edit(l, intervene.Resid, x, E)
	r.lens(l, n, pos0)
	r.timing("mlp", l, pos0, n, start)
	r.residual(l, n, pos0, "mlp")
}

// attnTask computes, for every new token and head, softmax(q·Kᵀ/√d) over
// the visible positions (causal) and the weighted sum of V. Work item i
// is one token's heads in part i%groups: the part walks each position's
// cached row once, for all its heads (a row holds every head, so the
// reads are contiguous and the prefetcher follows them), where a head at
// a time would stride through the cache a row apart.
type attnTask struct {
	r          *fwd
	l, n, pos0 int
	groups     int  // parts the heads of a token are split into
	watch      bool // copy scores and weights for a hook
}

// attnGroups is how many parts a token's heads are split into: one, so
// a worker reads each cached row once, unless one token's attention
// holds several attnMinWork of multiply-adds (and the batch has fewer
// tokens than twice the workers). Measured on 2 cores with the 110M
// shape: one sequence decoding at 48 and at 430 positions ran fastest
// with its whole token on one worker (13–40 % ahead of two or four parts).
func (r *fwd) attnGroups(n, visible int) int {
	work := visible * r.cfg.HeadDim * 2 * r.cfg.Heads
	g := min(work/attnMinWork, (2*r.pool.Threads()+n-1)/n)
	return min(max(g, 1), r.cfg.Heads)
}

// attnMinWork is the least multiply-adds of one part of a token's
// attention (see attnGroups); a variable for TestAttentionPartsAgree.
var attnMinWork = 1 << 20

// attnScoreFloats bounds a worker's attention scores (all heads' over
// the whole context, or one head's when the context is longer): a part
// takes as many heads per pass over the cache as fit. A variable for
// TestAttentionPartsAgree.
var attnScoreFloats = 1 << 18

func (r *fwd) attention(l, n, pos0 int) {
	if r.h != nil && r.h.OnAttention != nil {
		// every query row over all positions: future ones masked
		size := n * r.cfg.Heads * (pos0 + n)
		r.hk.scores, r.hk.weights = grow(r.hk.scores, size), grow(r.hk.weights, size)
		inf := float32(math.Inf(-1))
		for i := range r.hk.scores {
			r.hk.scores[i], r.hk.weights[i] = inf, 0
		}
	}
	watch := r.h != nil && r.h.OnAttention != nil
	r.tiles = attnTiles{r: r, l: l, watch: watch, items: r.tiles.items}
	r.tiles.plan()
	if len(r.tiles.items) > 0 {
		r.pool.Run(len(r.tiles.items), 1, &r.tiles)
	}
	longest, tiledRows := 0, 0
	for i := range r.segs {
		s := &r.segs[i]
		longest = max(longest, s.pos0+s.n)
		if r.tiled(s) {
			tiledRows += s.n
		}
	}
	g := r.attnGroups(n, longest)
	r.attn = attnTask{r: r, l: l, n: n, pos0: pos0, groups: g, watch: watch}
	if tiledRows < n {
		work := longest * r.cfg.HeadDim * 2 * ((r.cfg.Heads + g - 1) / g)
		r.pool.Run(n*g, max(1, minWorkPerPart/work), &r.attn)
	}
}

func (a *attnTask) Run(worker, lo, hi int) {
	r, H := a.r, a.r.cfg.Heads
	for idx := lo; idx < hi; idx++ {
		t, g := idx/a.groups, idx%a.groups
		if s := &r.segs[r.rowSeg[t]]; !r.tiled(s) { // else done in tiles
			a.row(worker, t, g*H/a.groups, (g+1)*H/a.groups, s)
		}
	}
}

// row computes heads [h0, h1) of token t, as many heads per pass over
// the cache as the worker's scores hold.
func (a *attnTask) row(worker, t, h0, h1 int, s *seg) {
	r := a.r
	span := r.rowPos[t] + 1 - r.firstKey(a.l, r.rowPos[t])
	per := len(r.scores[worker]) / span // at least one: the scores hold the context
	for c0 := h0; c0 < h1; c0 += per {
		a.heads(worker, t, c0, min(h1, c0+per), s)
	}
}

// heads computes heads [h0, h1) of token t in one pass over the cache:
// scores of every visible key, softmax, and the weighted sum of values,
// each head's numbers computed in the same order whatever the pass (bit
// for bit what dot and axpy give them, whichever kernels run).
//
// A part that holds every head reads each cached row whole and in order
// (scoreRows, valueRows); a part of the heads takes each head over a
// block of positions in turn (scoreKeys, addValues), its sums kept in
// registers. Measured at AVX2 on the 110M shape's attention, one sequence
// at depths 448 to 2048 (`bench -d`): whole rows read in order ran
// 5–25 % faster while a token's heads were one part (depths to 1024),
// and 40–75 % slower once they were split across the threads (1536,
// 2048), where the blocks ran faster.
func (a *attnTask) heads(worker, t, h0, h1 int, s *seg) {
	r, c := a.r, a.r.cfg
	QD, KVD, HD := c.QDim(), c.KVDim(), c.HeadDim
	visible := r.rowPos[t] + 1
	first := r.firstKey(a.l, r.rowPos[t])
	span := visible - first
	sc := r.scores[worker][:(h1-h0)*span] // head h's scores at (h-h0)·span
	rows := h1-h0 == c.Heads && hasRowKernels(HD)
	for j := first; j < visible; { // run by run (a paged cache's blocks)
		keys, _ := s.cache.Rows(a.l, j, visible)
		if rows {
			a.scoreRows(worker, t, keys, j-first, sc, span)
		} else {
			a.scoreKeys(t, h0, h1, keys, j-first, sc, span)
		}
		j += len(keys) / KVD
	}
	for h := h0; h < h1; h++ {
		w := sc[(h-h0)*span : (h-h0+1)*span]
		if c.AttnSoftcap != 0 {
			softcap(w, c.AttnSoftcap)
		}
		row := (t*c.Heads+h)*(a.pos0+a.n) + first // the hook's layout (one sequence)
		if a.watch {
			copy(r.hk.scores[row:], w)
		}
		Softmax(w)
		if a.watch {
			copy(r.hk.weights[row:], w)
		}
		clear(r.att[t*QD+h*HD : t*QD+(h+1)*HD])
	}
	for j := first; j < visible; {
		_, vals := s.cache.Rows(a.l, j, visible)
		if rows {
			a.valueRows(t, vals, j-first, sc, span)
		} else {
			a.addValues(t, h0, h1, vals, j-first, sc, span)
		}
		j += len(vals) / KVD
	}
}

// scoreRows sets every head's scores of one run of keys (its first at
// offset o of each head's span of sc), eight positions at a time, each
// key row read once and in order; a run shorter than eight goes through
// dot. Only where hasRowKernels.
func (a *attnTask) scoreRows(worker, t int, keys []float32, o int, sc []float32, span int) {
	r, c := a.r, a.r.cfg
	QD, KVD, HD, group := c.QDim(), c.KVDim(), c.HeadDim, c.Heads/c.KVHeads
	n, q := len(keys)/KVD, r.q[t*QD:(t+1)*QD]
	if n < 8 {
		for h := range c.Heads {
			for i := range n {
				sc[h*span+o+i] = dot(q[h*HD:(h+1)*HD], keys[i*KVD+(h/group)*HD:][:HD]) * c.AttnScale
			}
		}
		return
	}
	for b := 0; ; b += 8 {
		b = min(b, n-8) // a last block short of eight overlaps the one before
		scoreRows8(q, keys[b*KVD:], KVD, c.Heads, HD, 0, group, c.AttnScale, sc[o+b:], span, r.rowSums[worker])
		if b+8 == n {
			return
		}
	}
}

// valueRows adds one run of values into every head's context row, each
// value row read once and in order. Only where hasRowKernels.
func (a *attnTask) valueRows(t int, vals []float32, o int, sc []float32, span int) {
	r, c := a.r, a.r.cfg
	QD, KVD := c.QDim(), c.KVDim()
	valueRows(r.att[t*QD:(t+1)*QD], sc[o:], span, vals, KVD, len(vals)/KVD, c.Heads, c.HeadDim, 0, c.Heads/c.KVHeads)
}

// attnBlock is how many cached positions scoreKeys and addValues take at
// a time: every head of the part goes over a block before the next, so a
// block's rows come from memory once and stay in the core's caches for
// the heads that share them.
const attnBlock = 32

// scoreKeys sets heads [h0, h1)'s scores of one run of keys (its first at
// offset o of each head's span of sc): the run kernel where it runs, else
// dot, which it matches bit for bit.
func (a *attnTask) scoreKeys(t, h0, h1 int, keys []float32, o int, sc []float32, span int) {
	r, c := a.r, a.r.cfg
	QD, KVD, HD, group := c.QDim(), c.KVDim(), c.HeadDim, c.Heads/c.KVHeads
	n := len(keys) / KVD
	for b := 0; b < n; b += attnBlock {
		m, blk := min(attnBlock, n-b), keys[b*KVD:]
		for h := h0; h < h1; h++ {
			q, kvo := r.q[t*QD+h*HD:t*QD+(h+1)*HD], (h/group)*HD
			out := sc[(h-h0)*span+o+b:][:m]
			if scoreRun(q, blk[kvo:], KVD, m, HD, c.AttnScale, out) {
				continue
			}
			for i := range out {
				out[i] = dot(q, blk[i*KVD+kvo:][:HD]) * c.AttnScale
			}
		}
	}
}

// addValues adds one run of values (its first at offset o of each head's
// span of weights in sc) into heads [h0, h1)'s context rows, position by
// position in order: the run kernel where it runs, else axpy, which it
// matches bit for bit.
func (a *attnTask) addValues(t, h0, h1 int, vals []float32, o int, sc []float32, span int) {
	r, c := a.r, a.r.cfg
	QD, KVD, HD, group := c.QDim(), c.KVDim(), c.HeadDim, c.Heads/c.KVHeads
	n := len(vals) / KVD
	for b := 0; b < n; b += attnBlock {
		m, blk := min(attnBlock, n-b), vals[b*KVD:]
		for h := h0; h < h1; h++ {
			acc, kvo := r.att[t*QD+h*HD:t*QD+(h+1)*HD], (h/group)*HD
			w := sc[(h-h0)*span+o+b:][:m]
			if valueRun(acc, w, blk[kvo:], KVD, m, HD) {
				continue
			}
			for i, wi := range w {
				axpy(acc, wi, blk[i*KVD+kvo:][:HD])
			}
		}
	}
}

// firstKey is the first position a query at pos sees in layer l: 0, or
// the start of the sliding window on a local layer.
func (r *fwd) firstKey(l, pos int) int {
	if r.cfg.IsLocal(l) {
		return max(0, pos-r.cfg.Window+1)
	}
	return 0
}

func add(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

func addBias(x, b []float32, n int) {
	if b == nil {
		return
	}
	d := len(b)
	for t := 0; t < n; t++ {
		add(x[t*d:(t+1)*d], b)
	}
}

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
		r.tileV = append(r.tileV, make([]float32, tileVFloats(c.HeadDim, ctx)))
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

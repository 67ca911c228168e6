package cpu

import "math"

// A pass's attention of rows that do not go in tiles (attntile.go): each
// row's heads against every position its sequence has cached, split
// across the pool by token and, for long contexts, by groups of heads.

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

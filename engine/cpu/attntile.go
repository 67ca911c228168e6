package cpu

import (
	"stepthrough/engine/kv"
)

// Attention of a prompt chunk in tiles: for a block of query rows of one
// head, the scores against every visible key come from one matrix product
// (GemmABT, the tile kernels) instead of one dot call per key, and the
// weighted sum of values from another (against the head's values
// transposed per block). A decode row, a short chunk or a paged cache
// takes the row-by-row path (attnTask).

// tileRows is the query rows of one tile, and tileMinRows the fewest
// rows of a sequence's chunk for which tiles pay.
const (
	tileRows    = 16
	tileMinRows = 16
)

// tiled reports whether segment s's attention runs in tiles.
func (r *fwd) tiled(s *seg) bool {
	_, contiguous := s.cache.(*kv.Cache)
	return contiguous && s.n >= tileMinRows
}

// attnTiles is the tiled attention of a pass: work item w is tile w of
// the list (segment, head, first row).
type attnTiles struct {
	r     *fwd
	l     int
	watch bool
	items []tileItem
}

type tileItem struct{ seg, head, i0 int }

// plan lists the tiles of the pass's tiled segments.
func (a *attnTiles) plan() {
	a.items = a.items[:0]
	for si := range a.r.segs {
		s := &a.r.segs[si]
		if !a.r.tiled(s) {
			continue
		}
		for h := range a.r.cfg.Heads {
			for i0 := 0; i0 < s.n; i0 += tileRows {
				a.items = append(a.items, tileItem{si, h, i0})
			}
		}
	}
}

func (a *attnTiles) Run(worker, lo, hi int) {
	for _, it := range a.items[lo:hi] {
		a.tile(worker, it)
	}
}

// tile computes rows [i0, i0+tileRows) of one head of one segment.
func (a *attnTiles) tile(worker int, it tileItem) {
	if useGemm && a.r.cfg.HeadDim%gemmLanes == 0 {
		a.tileB(worker, it)
		return
	}
	r, c := a.r, a.r.cfg
	QD, KVD, HD := c.QDim(), c.KVDim(), c.HeadDim
	s := &r.segs[it.seg]
	rows := min(tileRows, s.n-it.i0)
	vis := s.pos0 + it.i0 + rows // keys the tile's last row sees
	keys, vals := s.cache.Rows(a.l, 0, s.pos0+s.n)
	kvo := (it.head / (c.Heads / c.KVHeads)) * HD
	S := r.tileS[worker][:rows*vis]
	q := r.q[(s.row0+it.i0)*QD+it.head*HD:]
	GemmABT(S, vis, q, QD, keys[kvo:], KVD, rows, vis, HD)
	for i := range rows {
		row := S[i*vis : (i+1)*vis]
		pos := s.pos0 + it.i0 + i
		first, own := r.firstKey(a.l, pos), pos+1 // this row's visible keys: [first, own)
		for j := first; j < own; j++ {
			row[j] *= c.AttnScale
		}
		a.softmaxRow(row, first, own, 1, s, it.i0+i, it.head)
		clear(row[:first])
		clear(row[own:vis])
	}
	vT := r.tileV[worker][:HD*vis]
	for j := range vis {
		v := vals[j*KVD+kvo : j*KVD+kvo+HD]
		for d, x := range v {
			vT[d*vis+j] = x
		}
	}
	GemmABT(r.att[(s.row0+it.i0)*QD+it.head*HD:], QD, S, vis, vT, vis, rows, HD, vis)
}

// tileVFloats is the size of a worker's tileV for heads of hd values and
// a context of ctx positions: tile's values transposed (hd·ctx), or
// tileB's queries transposed (hd·tileRows) and its edge tile (at most
// eight keys × tileRows), whichever is larger. (hd·(tileRows+8) was short
// of tileB's for heads under 16 values and contexts under 32 positions:
// stories260K's prompt of 16 tokens at AVX2 read past it.)
func tileVFloats(hd, ctx int) int {
	return max(hd*ctx, (hd+8)*tileRows)
}

// tileB is tile through the broadcast GEMM: the scores as keys × the
// tile's queries (eight keys broadcast against the queries packed
// d-major, stored transposed, so S is [query][key]; six or four keys at
// AVX2), softmax with the
// 1/√d scale folded into its exponent, then S·V reading V's rows in
// place (no transposed copy).
func (a *attnTiles) tileB(worker int, it tileItem) {
	r, c := a.r, a.r.cfg
	QD, KVD, HD := c.QDim(), c.KVDim(), c.HeadDim
	s := &r.segs[it.seg]
	rows := min(tileRows, s.n-it.i0)
	vis := s.pos0 + it.i0 + rows
	keys, vals := s.cache.Rows(a.l, 0, s.pos0+s.n)
	kvo := (it.head / (c.Heads / c.KVHeads)) * HD
	S := r.tileS[worker][:tileRows*vis] // rows past the tile's are scratch
	buf := r.tileV[worker]
	qT, edge := buf[:HD*tileRows], buf[HD*tileRows:HD*tileRows+8*tileRows]
	q := r.q[(s.row0+it.i0)*QD+it.head*HD:]
	for i := range tileRows {
		for d := range HD {
			v := float32(0)
			if i < rows {
				v = q[i*QD+d]
			}
			qT[d*tileRows+i] = v
		}
	}
	j := 0
	z := tileRows / gemmLanes
	if k6 := gemmKernelsT6[z]; k6 != nil { // AVX2: six keys at a time while they leave whole fours
		for range sixRowTiles(vis) {
			k6(&keys[j*KVD+kvo], KVD, &qT[0], tileRows, HD, &S[j], vis)
			j += 6
		}
	}
	for ; j+gemmTRows <= vis; j += gemmTRows {
		gemmKernelsT[z](&keys[j*KVD+kvo], KVD, &qT[0], tileRows, HD, &S[j], vis)
	}
	for step := gemmRows(z); j < vis; j += step { // the rest: keys × queries into edge, copied out
		mm := min(step, vis-j)
		gemmKernels[z][mm](&keys[j*KVD+kvo], KVD, &qT[0], tileRows, HD, &edge[0], tileRows)
		for jj := range mm {
			for i := range rows {
				S[i*vis+j+jj] = edge[jj*tileRows+i]
			}
		}
	}
	for i := range rows {
		row := S[i*vis : (i+1)*vis]
		pos := s.pos0 + it.i0 + i
		first, own := r.firstKey(a.l, pos), pos+1
		a.softmaxRow(row, first, own, c.AttnScale, s, it.i0+i, it.head)
		clear(row[:first])
		clear(row[own:])
	}
	gemmAB(r.att[(s.row0+it.i0)*QD+it.head*HD:], QD, S, vis, vals[kvo:], KVD, rows, HD, vis)
}

// softmaxRow turns one query row's raw scores row[first:own] into
// weights: ×scale (folded into the exponent when there is no soft cap),
// the soft cap, the softmax; and copies scores and weights for a hook
// watching (query t of the segment, head h).
func (a *attnTiles) softmaxRow(row []float32, first, own int, scale float32, s *seg, t, h int) {
	r, c := a.r, a.r.cfg
	sc := row[first:own]
	if c.AttnSoftcap != 0 {
		if scale != 1 {
			for j := range sc {
				sc[j] *= scale
			}
			scale = 1
		}
		softcap(sc, c.AttnSoftcap)
	}
	hk := -1
	if a.watch { // the hook's layout: one sequence, row t, head h
		hk = (t*c.Heads+h)*(s.pos0+s.n) + first
		for j, v := range sc {
			r.hk.scores[hk+j] = v * scale
		}
	}
	softmaxScaled(sc, scale)
	if hk >= 0 {
		copy(r.hk.weights[hk:], sc)
	}
}

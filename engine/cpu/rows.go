package cpu

import "stepthrough/engine/model"

// Row-wise work of a prompt chunk split across the pool: the norms before
// attention and the MLP, and the rotation of Q and K (with one table of
// angles per row for all layers). A decode step (one row) runs inline.

const (
	rowNorm  = iota // out[t] = norm(x[t]) with vecs v
	rowRope         // norm each head of q[t] and k[t] (QKNorm), then rotate them by the row's table
	rowTable        // fill the rows' rotation tables
)

// rowTask is one row-wise op over rows [lo, hi) of the chunk.
type rowTask struct {
	r      *fwd
	op     int
	l      int // rowRope: the layer
	x, out []float32
	v      *vecs
}

func (o *rowTask) Run(_, lo, hi int) {
	r, c := o.r, o.r.cfg
	E, QD, KVD, HD, dims := c.Embd, c.QDim(), c.KVDim(), c.HeadDim, c.RopeDims
	for t := lo; t < hi; t++ {
		switch o.op {
		case rowNorm:
			r.norm(o.out[t*E:(t+1)*E], o.x[t*E:(t+1)*E], *o.v)
		case rowTable:
			ropeTable(r.ropeTab[t*dims:(t+1)*dims], dims, r.rowPos[t], &c.Rope, r.ropeFactors)
			if r.ropeTabL != nil {
				ropeTable(r.ropeTabL[t*dims:(t+1)*dims], dims, r.rowPos[t], &c.RopeLocal, r.ropeFactors)
			}
		case rowRope:
			tab := r.ropeTab[t*dims : (t+1)*dims]
			if r.ropeTabL != nil && c.IsLocal(o.l) {
				tab = r.ropeTabL[t*dims : (t+1)*dims]
			}
			q, k := r.q[t*QD:(t+1)*QD], r.k[t*KVD:(t+1)*KVD]
			if nv := &r.norms[o.l]; nv.qNorm != nil {
				headNorms(q, nv.qNorm, c.NormEps)
				headNorms(k, nv.kNorm, c.NormEps)
			}
			if r.m.Spec.Rope == model.RopeNeoX {
				ropeNeoX(q, c.Heads, HD, dims, tab)
				ropeNeoX(k, c.KVHeads, HD, dims, tab)
			} else {
				ropeNorm(q, c.Heads, HD, dims, tab)
				ropeNorm(k, c.KVHeads, HD, dims, tab)
			}
		}
	}
}

// rows runs op over the chunk's n rows, perRow the op's values a row (a
// part gets enough of them to be worth waking a thread).
func (r *fwd) rows(n, perRow int, op rowTask) {
	op.r = r
	r.rowOp = op
	r.pool.Run(n, max(1, minWorkPerPart/max(1, rowCost*perRow)), &r.rowOp)
	r.rowOp = rowTask{}
}

// rowCost is what a row op costs a value, in multiply-adds of a product:
// a norm's sum and scaling or a rotation take several instructions a
// value, none of them vectorised, so eight decoding sequences' norms
// (eight rows of 768) are worth two threads.
const rowCost = 8

// headNorms RMS-normalises each head of x (len(w) values each) with
// weight w: qwen3's and gemma3's Q/K norms.
func headNorms(x, w []float32, eps float32) {
	hd := len(w)
	for h := 0; h < len(x)/hd; h++ {
		v := x[h*hd : (h+1)*hd]
		RMSNorm(v, v, w, eps)
	}
}

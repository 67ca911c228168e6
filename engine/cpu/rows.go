package cpu

import "stepthrough/engine/model"

// Row-wise work of a prompt chunk split across the pool: the norms before
// attention and the MLP, and the rotation of Q and K (with one table of
// angles per row for all layers). A decode step (one row) runs inline.

const (
	rowNorm  = iota // out[t] = norm(x[t]) with vecs v
	rowRope         // rotate q[t] and k[t] by the row's table
	rowTable        // fill the rows' rotation tables
)

// rowTask is one row-wise op over rows [lo, hi) of the chunk.
type rowTask struct {
	r      *fwd
	op     int
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
			ropeTable(r.ropeTab[t*dims:(t+1)*dims], dims, r.rowPos[t], c.RopeBase)
		case rowRope:
			tab := r.ropeTab[t*dims : (t+1)*dims]
			q, k := r.q[t*QD:(t+1)*QD], r.k[t*KVD:(t+1)*KVD]
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
	r.pool.Run(n, max(1, minWorkPerPart/max(1, perRow)), &r.rowOp)
	r.rowOp = rowTask{}
}

package cpu

import (
	"stepthrough/engine/intervene"
)

// edit applies the pass's edits at layer l's site to rows (one row per
// token of the chunk, width values each, at r.rowPos); a head's or a
// unit's edits touch only its columns. A pass without edits returns at
// the first check.
func (r *fwd) edit(l int, site intervene.Site, rows []float32, width int) {
	if r.iv == nil {
		return
	}
	for i := range r.iv.Edits {
		e := &r.iv.Edits[i]
		if e.Layer != l || e.Site != site {
			continue
		}
		lo, w := e.Columns(r.cfg.HeadDim, width)
		for t, p := range r.rowPos {
			if e.At(p) {
				apply(e, rows[t*width+lo:t*width+lo+w])
			}
		}
	}
}

// apply does one edit to one row's values at its site.
func apply(e *intervene.Edit, v []float32) {
	switch e.Op {
	case intervene.Zero:
		clear(v)
	case intervene.Scale:
		scale(v, e.Factor)
	case intervene.Replace:
		copy(v, e.Vector)
	case intervene.Add:
		for j, d := range e.Vector {
			v[j] += e.Factor * d
		}
	}
}

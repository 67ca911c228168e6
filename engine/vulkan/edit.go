//go:build cgo

package vulkan

import (
	"fmt"
	"math"

	"stepthrough/engine/hooks"
	"stepthrough/engine/intervene"
)

// uploadEdits writes the pass's edits' vectors (checked when the runner
// took them: Runner.SetEdits) end to end into editV (nothing for a pass
// without edits).
func (r *fwd) uploadEdits() error {
	if r.iv == nil {
		return nil
	}
	r.editOff = r.editOff[:0]
	var all []float32
	for _, e := range r.iv.Edits {
		r.editOff = append(r.editOff, len(all))
		all = append(all, e.Vector...)
	}
	if 4*len(all) > r.editV.size {
		return fmt.Errorf("forward: the interventions' vectors take %d floats; the pass holds %d", len(all), r.editV.size/4)
	}
	return r.d.writeF32(r.editV, 0, all)
}

// editNames name each site's dispatch (its descriptor set: the site's
// buffer and the vectors).
var editNames = map[intervene.Site]string{intervene.Head: "edit head", intervene.Unit: "edit unit",
	intervene.Attn: "edit attn", intervene.MLP: "edit mlp", intervene.Resid: "edit resid"}

// edit records the pass's edits at layer l's site on x: n rows of stride
// floats, at positions pos0…; a head's or a unit's touch only its columns.
func (r *fwd) edit(p *passState, l int, at intervene.Site, x *buffer, stride, n, pos0 int) {
	if r.iv == nil {
		return
	}
	for i := range r.iv.Edits {
		e := &r.iv.Edits[i]
		if e.Layer != l || e.Site != at {
			continue
		}
		lo, w := e.Columns(r.cfg.HeadDim, stride)
		pos := uint32(math.MaxUint32)
		if e.Pos >= 0 {
			pos = uint32(e.Pos)
		}
		p.c.edit(r.set(site{l, editNames[at]}, x, r.editV), n, stride, lo, w, pos0, pos, uint32(e.Op), e.Factor, r.editOff[i])
	}
}

// lens records the logit lens of layer l: the final norm and the output
// matrix applied to the residual stream after it (into the logits buffer,
// which the pass's own output overwrites later), read back for the hook.
func (r *fwd) lens(p *passState, l, n, pos0 int) {
	c, W := r.cfg, r.m.Weights
	E, V := c.Embd, c.Vocab
	r.norm(p, l, "lens norm", r.vec[W.OutNorm], r.vec[W.OutNormB], n)
	out := r.w[W.OutputMatrix()]
	x := r.roundX(p.c, l, "lens", W.OutputMatrix(), r.xn, 0, n)
	p.c.matMul(r.set(site{l, "lens"}, out.b, x, r.logits), out.typ, V, E, n, out.row0)
	r.bias(p, l, "lens", r.logits, r.vec[W.OutputB], n, V)
	if c.FinalSoftcap != 0 {
		p.c.softcap(r.set(site{l, "lens softcap"}, r.logits), n*V, c.FinalSoftcap)
	}
	p.flush("", l, pos0, n, func() {
		r.h.OnLens(hooks.Lens{Layer: l, Pos0: pos0, N: n, Vocab: V, Logits: p.readF32(r.logits, 0, n*V)})
	})
}

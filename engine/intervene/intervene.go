// Package intervene declares changes to a forward pass: switch an
// attention head, an MLP unit or a whole sublayer off, scale one, replace
// a head's output or a position's residual stream with a value (its mean
// over a reference text, or the same activation from another prompt:
// patching), or add a direction to the residual stream (steering).
//
// An edit is a small value, not a callback, so a URL, a lesson, a
// Compare lane and a trace can write it down and replay it. A Set is a
// setting of an engine session (engine.Session.SetEdits), applied to
// every later pass until changed; the backends apply it where the forward
// pass computes that site, and a pass with no Set costs one nil check.
package intervene

import (
	"fmt"
	"math"
	"slices"
)

// Site is where in a layer an edit applies.
type Site uint8

const (
	// Head is one attention head's output (its weighted sum of values,
	// before the output projection mixes the heads).
	Head Site = iota + 1
	// Unit is one MLP unit's activation (before the down projection).
	Unit
	// Attn is a layer's whole attention output (after the output
	// projection, before it joins the residual stream).
	Attn
	// MLP is a layer's whole MLP output, likewise.
	MLP
	// Resid is the residual stream after the layer (what the next layer
	// reads).
	Resid
)

// Op is what an edit does to its site.
type Op uint8

const (
	// Zero sets the site to zero: ablation.
	Zero Op = iota + 1
	// Scale multiplies the site by Factor.
	Scale
	// Replace replaces the site with Vector: a mean ablation, or a patch.
	Replace
	// Add adds Factor × Vector: steering.
	Add
)

// Edit is one change at one site.
type Edit struct {
	Layer  int  // 0-based
	Site   Site // where
	Index  int  // the head (Head) or the unit (Unit); unused elsewhere
	Pos    int  // the absolute position it applies at; -1: every position
	Op     Op
	Factor float32   // Scale's factor, Add's strength
	Vector []float32 // Replace's value, Add's direction: a head's width (Head) or the model's (Attn, MLP, Resid)
}

// At reports whether the edit applies at absolute position p.
func (e *Edit) At(p int) bool { return e.Pos < 0 || e.Pos == p }

// Meanable reports whether a mean ablation replaces the edit: a head or
// an MLP unit switched off (to zero).
func (e *Edit) Meanable() bool {
	return e.Op == Zero && (e.Site == Head || e.Site == Unit)
}

// Shape is what an edit is checked against: the model's sizes.
type Shape struct {
	Layers, Heads, HeadDim, FFN, Embd int
}

// Check refuses an edit the model cannot take, naming it.
func (e *Edit) Check(s Shape) error {
	if e.Layer < 0 || e.Layer >= s.Layers {
		return fmt.Errorf("intervention %s: the model has layers 1 to %d", e, s.Layers)
	}
	width := s.Embd
	switch e.Site {
	case Head:
		if e.Index < 0 || e.Index >= s.Heads {
			return fmt.Errorf("intervention %s: the model has heads 1 to %d", e, s.Heads)
		}
		width = s.HeadDim
	case Unit:
		if e.Index < 0 || e.Index >= s.FFN {
			return fmt.Errorf("intervention %s: the model has MLP units 1 to %d", e, s.FFN)
		}
		width = 1
	case Attn, MLP, Resid:
	default:
		return fmt.Errorf("intervention: unknown site %d", e.Site)
	}
	switch e.Op {
	case Zero, Scale:
	case Replace, Add:
		if len(e.Vector) != width {
			return fmt.Errorf("intervention %s: a vector of %d values, want %d", e, len(e.Vector), width)
		}
	default:
		return fmt.Errorf("intervention %s: unknown operation %d", e, e.Op)
	}
	return nil
}

// Set is the edits of one forward pass, applied in order at each site.
type Set struct {
	Edits []Edit
}

// Plus is a new set: s's edits (a nil set has none), then e.
func (s *Set) Plus(e Edit) *Set {
	out := &Set{}
	if s != nil {
		out.Edits = slices.Clone(s.Edits)
	}
	out.Edits = append(out.Edits, e)
	return out
}

// MaxFactor bounds how much a set may scale any one value: a scale's
// factor, and the product of the scales that reach one value (a layer's
// attention scaled and one of its heads too). Past this the residual
// stream overflows float32 within a few layers, and the logits are NaN.
const MaxFactor = 1e4

// Check checks every edit against the model's shape (a nil set has none),
// and the set as a whole: one switch-off or scale per site, and no value
// scaled past MaxFactor.
func (s *Set) Check(sh Shape) error {
	if s == nil {
		return nil
	}
	for i := range s.Edits {
		if err := s.Edits[i].Check(sh); err != nil {
			return err
		}
	}
	return s.checkScales()
}

// Checked is s as a pass takes it: nil when s has no edits, else s once
// Check accepts it for sh.
func (s *Set) Checked(sh Shape) (*Set, error) {
	if s == nil || len(s.Edits) == 0 {
		return nil, nil
	}
	if err := s.Check(sh); err != nil {
		return nil, err
	}
	return s, nil
}

// checkScales refuses two switch-offs or scales on one site (write the
// site once, with the factor meant) and a head or unit whose scale times
// its sublayer's passes MaxFactor.
func (s *Set) checkScales() error {
	whole := map[[2]int]float64{} // layer, Attn or MLP → its factor
	for i, e := range s.Edits {
		if e.Op != Zero && e.Op != Scale {
			continue
		}
		if e.Op == Scale && !(math.Abs(float64(e.Factor)) <= MaxFactor) {
			return fmt.Errorf("intervention %s: the factor is a number from -%g to %g", &e, float64(MaxFactor), float64(MaxFactor))
		}
		for _, prev := range s.Edits[:i] {
			if (prev.Op == Zero || prev.Op == Scale) && prev.Layer == e.Layer && prev.Site == e.Site && prev.Index == e.Index && prev.Pos == e.Pos {
				return fmt.Errorf("intervention %s: %s already edits that site (write each site once, with the factor you mean)", &e, &prev)
			}
		}
		if e.Op == Scale && (e.Site == Attn || e.Site == MLP) {
			whole[[2]int{e.Layer, int(e.Site)}] = math.Abs(float64(e.Factor))
		}
	}
	for _, e := range s.Edits {
		outer := map[Site]Site{Head: Attn, Unit: MLP}[e.Site]
		f, ok := whole[[2]int{e.Layer, int(outer)}]
		if e.Op == Scale && outer != 0 && ok && f*math.Abs(float64(e.Factor)) > MaxFactor {
			return fmt.Errorf("intervention %s: with layer %d's %s scaled by %g it scales that value by %g (at most %g)", &e, e.Layer+1, map[Site]string{Attn: "attention", MLP: "MLP"}[outer], f, f*math.Abs(float64(e.Factor)), float64(MaxFactor))
		}
	}
	return nil
}

// Columns are the values of a row at e's site that e owns: a head its
// headDim columns of the heads' outputs side by side, an MLP unit its one
// activation, a whole sublayer or the residual stream all width of them.
func (e *Edit) Columns(headDim, width int) (lo, n int) {
	switch e.Site {
	case Head:
		return e.Index * headDim, headDim
	case Unit:
		return e.Index, 1
	}
	return 0, width
}

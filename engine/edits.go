package engine

import (
	"context"
	"fmt"

	"stepthrough/engine/intervene"
)

// EditSources are where an intervention's vectors come from: texts and
// tokens the intact model reads before the run. A run, a Compare lane, a
// command and a lesson's claim write them beside their edits; ResolveEdits
// turns them into edits with vectors.
type EditSources struct {
	// MeanOver makes the set's switched-off heads and units (Meanable
	// edits) mean ablations: each takes its mean over this text's
	// positions (BOS added as the model asks). "": zero stays zero.
	MeanOver string
	// Steer adds a steering: its direction (SteerEdit) added after its
	// layer at every position. nil: none.
	Steer *intervene.Steer
	// Patch replaces the residual stream after a layer at one position
	// with its value in a run of other tokens. nil: none.
	Patch *PatchSource
}

// meanOf reports whether src mean-ablates set: it names a text and set
// has edits.
func (src EditSources) meanOf(set *intervene.Set) bool {
	return src.MeanOver != "" && set != nil
}

// reads reports whether resolving set needs passes of the model.
func (src EditSources) reads(set *intervene.Set) bool {
	return src.meanOf(set) || src.Steer != nil || src.Patch != nil
}

// PatchSource is activation patching's source: the residual stream after
// Layer at position Pos (both from 0) of a run of From.
type PatchSource struct {
	Layer, Pos int
	From       []int32
}

// ResolveEdits is set with its sources' vectors read on the intact model:
// its switched-off heads and units mean-ablated over src.MeanOver (when
// set has edits), then src.Steer's edit and src.Patch's added, in that
// order. It reads on l's own session, made only when src names a source.
func (l *Loaded) ResolveEdits(ctx context.Context, set *intervene.Set, src EditSources) (*intervene.Set, error) {
	if !src.reads(set) {
		return set, nil
	}
	s, err := l.NewSession(0)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.ResolveEdits(ctx, set, src)
}

// ResolveEdits is Loaded.ResolveEdits read on s, with s's own edits set
// aside while it reads; s is left empty after, its edits as they were.
func (s *Session) ResolveEdits(ctx context.Context, set *intervene.Set, src EditSources) (*intervene.Set, error) {
	prev := s.edits
	if err := s.SetEdits(nil); err != nil {
		return nil, err
	}
	defer func() { _ = s.SetEdits(prev) }() // prev was taken before: it is taken again
	defer s.Reset()
	if src.meanOf(set) {
		mean, err := s.MeanOver(ctx, src.MeanOver, set)
		if err != nil {
			return nil, err
		}
		set = mean
	}
	if src.Steer != nil {
		e, err := s.SteerEdit(ctx, *src.Steer)
		if err != nil {
			return nil, err
		}
		set = set.Plus(e)
	}
	if p := src.Patch; p != nil {
		e, err := s.patchEdit(ctx, *p)
		if err != nil {
			return nil, err
		}
		set = set.Plus(e)
	}
	return set, nil
}

// patchEdit is p as an edit: the residual stream after p.Layer at p.Pos
// of a run of p.From, replacing the one there.
func (s *Session) patchEdit(ctx context.Context, p PatchSource) (intervene.Edit, error) {
	if p.Pos < 0 || p.Pos >= len(p.From) {
		return intervene.Edit{}, fmt.Errorf("patching: position %d of a source of %d tokens", p.Pos+1, len(p.From))
	}
	rows, err := s.Residuals(ctx, p.Layer, p.From)
	if err != nil {
		return intervene.Edit{}, err
	}
	return patchAt(p.Layer, p.Pos, rows[p.Pos]), nil
}

// patchAt is the edit that replaces the residual stream after layer at
// position pos with v.
func patchAt(layer, pos int, v []float32) intervene.Edit {
	return intervene.Edit{Layer: layer, Site: intervene.Resid, Pos: pos, Op: intervene.Replace, Vector: v}
}

package present

import (
	"fmt"
	"slices"

	"stepthrough/engine/intervene"
	"stepthrough/engine/sample"
	"stepthrough/engine/trace"
	"stepthrough/views"
)

// edited reports whether the run's interventions touch layer l's site
// (index: a head; -1: any).
func (s *snap) edited(l int, site intervene.Site, index int) bool {
	set, _ := s.Run.Edits()
	if set == nil {
		return false
	}
	return slices.ContainsFunc(set.Edits, func(e intervene.Edit) bool {
		return e.Layer == l && e.Site == site && (index < 0 || e.Index == index)
	})
}

// editEffect is what the run's interventions change at step st: its
// next-token distribution (with the edits, from the trace) beside the
// baseline's (without them); nil for a run without edits.
func (s *snap) editEffect(st *trace.Step) *views.EditEffect {
	set, _ := s.Run.Edits()
	if set == nil || s.Baseline == nil || st.Logits == nil {
		return nil
	}
	before, after := sample.Probabilities(s.Baseline, 1), sample.Probabilities(st.Logits.Logits, 1)
	if len(before) != len(after) {
		return nil
	}
	x := &views.EditEffect{Edits: set.String()}
	for _, e := range set.Edits {
		x.Items = append(x.Items, inWords(e))
	}
	top := sample.TopN(before, 8)
	for _, id := range top {
		x.Top = append(x.Top, views.EditRow{Piece: s.piece(id), Before: float64(before[id]), After: float64(after[id])})
	}
	was := top[0]
	x.Token, x.WasP, x.NowP = s.piece(was), float64(before[was]), float64(after[was])
	x.NowRank = 1
	for _, p := range after {
		if p > after[was] {
			x.NowRank++
		}
	}
	if now := sample.TopN(after, 1)[0]; now != was {
		x.NewTop = s.piece(now)
	}
	lb, la := sample.LogSoftmax(s.Baseline), sample.LogSoftmax(st.Logits.Logits)
	for i, p := range before {
		if p > 0 {
			x.KL += float64(p) * (lb[i] - la[i])
		}
	}
	return x
}

// inWords says what one edit does.
func inWords(e intervene.Edit) string {
	var what string
	switch e.Site {
	case intervene.Head:
		what = fmt.Sprintf("layer %d, head %d", e.Layer+1, e.Index+1)
	case intervene.Unit:
		what = fmt.Sprintf("layer %d, MLP unit %d", e.Layer+1, e.Index+1)
	case intervene.Attn:
		what = fmt.Sprintf("layer %d's attention", e.Layer+1)
	case intervene.MLP:
		what = fmt.Sprintf("layer %d's MLP", e.Layer+1)
	default:
		what = e.String()
	}
	if e.Op == intervene.Scale {
		return fmt.Sprintf("%s scaled by %g", what, e.Factor)
	}
	return what + " switched off"
}

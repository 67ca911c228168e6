package present

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"stepthrough/engine/intervene"
	"stepthrough/engine/sample"
	"stepthrough/engine/trace"
	"stepthrough/views"
)

// edited reports whether the run's interventions touch layer l's site
// (index: a head; -1: any).
func (s *snap) edited(l int, site intervene.Site, index int) bool {
	if s.Edits == nil {
		return false
	}
	return slices.ContainsFunc(s.Edits.Edits, func(e intervene.Edit) bool {
		return e.Layer == l && e.Site == site && (index < 0 || e.Index == index)
	})
}

// offNote says, above an attention head's pattern, what the run's
// interventions do to that head's output: the pattern is computed as
// usual, what leaves the head is changed ("" when nothing is).
func (s *snap) offNote(layer, head int) string {
	if s.Edits == nil {
		return ""
	}
	for _, e := range s.Edits.Edits {
		var who string
		switch {
		case e.Layer == layer && e.Site == intervene.Head && e.Index == head:
			who = fmt.Sprintf("Head %d", head+1)
		case e.Layer == layer && e.Site == intervene.Attn:
			who = fmt.Sprintf("Layer %d's attention, every head,", layer+1)
		default:
			continue
		}
		at := ""
		if e.Pos >= 0 {
			at = fmt.Sprintf(" at position %d", e.Pos)
		}
		switch e.Op {
		case intervene.Zero:
			return fmt.Sprintf("%s is switched off%s in this run: its output is zero, so the pattern below, still computed, adds nothing to the residual stream.", who, at)
		case intervene.Scale:
			return fmt.Sprintf("%s is scaled by %g%s in this run: its output is multiplied by %g; the pattern below is computed as usual.", who, e.Factor, at, e.Factor)
		case intervene.Replace:
			return fmt.Sprintf("%s is replaced by its mean over the reference text%s in this run: its output is that average, not what the pattern below computes.", who, at)
		}
	}
	return ""
}

// headTag is a word after a head's name in the head grid when the run's
// interventions change its output: " (off)", " (scaled ×0.5)", " (mean)".
func (s *snap) headTag(layer, head int) string {
	if s.Edits == nil {
		return ""
	}
	for _, e := range s.Edits.Edits {
		if e.Layer != layer || e.Site != intervene.Head || e.Index != head {
			continue
		}
		switch e.Op {
		case intervene.Zero:
			return " (off)"
		case intervene.Scale:
			return fmt.Sprintf(" (scaled ×%g)", e.Factor)
		case intervene.Replace:
			return " (mean)"
		}
	}
	return ""
}

// editEffect is what the run's interventions change at step st: its
// next-token distribution (with the edits, from the trace) beside the
// baseline's (without them); nil for a run without edits.
func (s *snap) editEffect(st *trace.Step) *views.EditEffect {
	set := s.Edits
	if set == nil || s.Baseline == nil || st.Logits == nil {
		return nil
	}
	before, after := sample.Probabilities(s.Baseline, 1), sample.Probabilities(st.Logits.Logits, 1)
	if len(before) != len(after) {
		return nil
	}
	x := &views.EditEffect{Edits: s.Run.Ablate.String()}
	if s.Run.MeanOver != "" {
		x.Edits += fmt.Sprintf(" (to the mean over %q)", s.Run.MeanOver)
	}
	steer := s.Run.Steer
	if steer != nil {
		x.Edits = strings.TrimPrefix(x.Edits+"; steer "+steer.String(), "; ")
	}
	for _, e := range set.Edits {
		if e.Op == intervene.Add && steer != nil {
			x.Items = append(x.Items, fmt.Sprintf("after layer %d, toward %q and away from %q, ×%g", steer.Layer+1, steer.Toward, steer.Away, steer.Strength))
			continue
		}
		x.Items = append(x.Items, inWords(e))
	}
	top, now := sample.TopN(before, 8), sample.TopN(after, 1)
	if len(top) == 0 || len(now) == 0 { // no number to compare (the engine refuses non-finite logits; this holds if one slips by)
		return nil
	}
	for _, id := range top {
		x.Top = append(x.Top, views.EditRow{Piece: s.piece(id), Before: float64(before[id]), After: float64(after[id])})
	}
	was := top[0]
	x.Token, x.WasP, x.NowP = s.piece(was), float64(before[was]), float64(after[was])
	x.NowRank = sample.Rank(after, was)
	if now[0] != was {
		x.NewTop = s.piece(now[0])
	}
	x.KL = sample.KL(sample.LogSoftmax(s.Baseline), sample.LogSoftmax(st.Logits.Logits))
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
	switch e.Op {
	case intervene.Scale:
		return fmt.Sprintf("%s scaled by %g", what, e.Factor)
	case intervene.Replace:
		return what + " replaced by its mean over the reference text"
	}
	return what + " switched off"
}

// lensCols is how many positions, the last ones, the lens grid shows.
const lensCols = 8

// lensGrid builds the logit-lens grid of step st from its recorded
// lenses (nil when the run recorded none).
func (s *snap) lensGrid(st *trace.Step) *views.LensGrid {
	if len(st.Layers) == 0 || st.Layers[len(st.Layers)-1].Lens == nil {
		return nil
	}
	last := st.Layers[len(st.Layers)-1].Lens
	for _, L := range st.Layers {
		if L.Lens == nil || len(L.Lens.Top) != len(last.Top) || slices.ContainsFunc(L.Lens.Top, func(r []trace.Candidate) bool { return len(r) == 0 }) {
			return nil // a layer without a reading at every position: no grid rather than a wrong one
		}
	}
	labels := s.pieces(st)
	cols := min(lensCols, len(last.Top))
	first := len(last.Top) - cols // the kept rows are the pass's last ones
	g := &views.LensGrid{}
	for c := range cols {
		if p := st.Pos0 + st.N - cols + c; p >= 0 && p < len(labels) {
			g.Positions = append(g.Positions, labels[p])
		}
	}
	final := last.Top[len(last.Top)-1][0].ID
	g.Final = s.piece(final)
	for _, L := range st.Layers {
		row := views.LensRow{Layer: L.Index + 1, FinalRank: sample.Rank(L.Lens.Last, final)}
		for c := range cols {
			top := L.Lens.Top[first+c][0]
			row.Cells = append(row.Cells, views.LensCell{Piece: s.piece(top.ID), P: float64(top.P), Final: top.ID == last.Top[first+c][0].ID})
		}
		g.Rows = append(g.Rows, row)
	}
	return g
}

// topUnits is how many of the most active MLP units the panel offers to
// switch off.
const topUnits = 5

// unitToggles are the units of layer l the run switches off, then the
// most active ones at the last position (by |activation|), each with its
// toggle.
func (s *snap) unitToggles(l int, act []float32) []views.UnitToggle {
	var out []views.UnitToggle
	seen := map[int]bool{}
	add := func(u int) {
		if u >= 0 && u < len(act) && !seen[u] {
			seen[u] = true
			out = append(out, views.UnitToggle{Unit: u + 1, Value: float64(act[u]), Toggle: fmt.Sprintf("L%dU%d", l+1, u+1), Off: s.edited(l, intervene.Unit, u)})
		}
	}
	if s.Edits != nil {
		for _, e := range s.Edits.Edits {
			if e.Layer == l && e.Site == intervene.Unit {
				add(e.Index)
			}
		}
	}
	abs := make([]float32, len(act))
	for i, v := range act {
		abs[i] = float32(math.Abs(float64(v)))
	}
	for _, u := range sample.TopN(abs, topUnits) {
		add(int(u))
	}
	return out
}

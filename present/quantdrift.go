package present

import (
	"fmt"
	"math"
	"slices"

	"stepthrough/engine/quantlens"
	"stepthrough/views"
)

// The quantization page's drift by layer: quantlens reports (each
// precision against the model as stored) as a chart, its data table,
// the most fragile heads and the logit lens's first disagreement.

// FragilePerType is how many heads the fragile-heads table lists for
// each precision.
const FragilePerType = 3

// QuantDrift builds the section from one report per precision (types
// and reps in the same order).
func QuantDrift(types []string, reps []*quantlens.Report) views.QuantDrift {
	d := views.QuantDrift{}
	for i, r := range reps {
		d.Tokens = len(r.Tokens)
		for l, layer := range r.Layers {
			a, m := quantlens.SpreadOf(layer.Attn.RelErr), quantlens.SpreadOf(layer.MLP.RelErr)
			d.Rows = append(d.Rows, views.QuantDriftRow{Type: types[i], Layer: l + 1, Attn: [3]float64{a.Min, a.Median, a.Max}, MLP: [3]float64{m.Min, m.Median, m.Max},
				Cosine: quantlens.SpreadOf(layer.MLP.Cosine).Mean, LensAgree: layer.LensAgreements(), Positions: len(r.Tokens)})
		}
		d.Lens = append(d.Lens, lensWords(types[i], r))
		f := views.QuantFragile{Type: types[i]}
		for _, h := range r.FragileHeads(FragilePerType) {
			f.Heads = append(f.Heads, views.QuantHeadJS{Head: fmt.Sprintf("L%dH%d", h.Layer+1, h.Index+1), JSMean: h.JSMean, JSMax: h.JSMax})
		}
		d.Fragile = append(d.Fragile, f)
	}
	d.Chart = driftChart(types, reps)
	return d
}

// lensWords says where the logit lens under typ first picks another top
// token than under the model as stored: for the next token (the last
// position) and at any position.
func lensWords(typ string, r *quantlens.Report) string {
	n := len(r.Layers)
	next := fmt.Sprintf("%s: on the next token (the prompt's last position) the logit lens picks the same top token as the model as stored after every one of the %d layers", typ, n)
	if l := r.FirstDisagree[len(r.FirstDisagree)-1]; l >= 0 {
		next = fmt.Sprintf("%s: on the next token (the prompt's last position) the logit lens first picks another top token than the model as stored after layer %d of %d", typ, l+1, n)
	}
	first, at := -1, 0
	for _, l := range r.FirstDisagree {
		if l >= 0 && (first < 0 || l < first) {
			first = l
		}
		if l >= 0 {
			at++
		}
	}
	if first < 0 {
		return next + "; at every other position too."
	}
	verb := "positions disagree"
	if at == 1 {
		verb = "position disagrees"
	}
	return fmt.Sprintf("%s; over all %d positions, the first disagreement is after layer %d, and %d %s somewhere.", next, len(r.FirstDisagree), first+1, at, verb)
}

// The chart's frame, in its viewBox units.
const (
	driftW, driftLeft, driftRight = 640.0, 56.0, 96.0
	driftTop, driftH              = 12.0, 200.0
)

// driftChart draws each precision's relative error after every layer's
// attention and MLP: a line through the medians over positions, a
// whisker from the least to the largest, a legend naming each line.
func driftChart(types []string, reps []*quantlens.Report) views.Chart {
	if len(reps) == 0 || len(reps[0].Layers) == 0 {
		return views.Chart{}
	}
	L := len(reps[0].Layers)
	c := views.Chart{W: int(driftW), H: int(driftTop + driftH + 40), Title: fmt.Sprintf(
		"The residual stream's relative error ‖precision − stored‖ / ‖stored‖ after each layer's attention (first point) and MLP (second point): each line joins the medians over the prompt's %d positions; whiskers span the least to the largest", len(reps[0].Tokens))}
	top := 0.0
	for _, r := range reps {
		for _, l := range r.Layers {
			for _, v := range append(slices.Clone(l.Attn.RelErr), l.MLP.RelErr...) {
				if !math.IsInf(v, 0) && !math.IsNaN(v) {
					top = max(top, v)
				}
			}
		}
	}
	top = niceCeil(top)
	pw := driftW - driftLeft - driftRight
	y := func(v float64) float64 { return driftTop + driftH*(1-min(v, top)/top) } // a zero reference row's +Inf at the top
	step := pw / float64(2*L)
	c.Lines = append(c.Lines, views.ChartLine{X1: driftLeft, Y1: driftTop, X2: driftLeft, Y2: driftTop + driftH, Class: "axis"},
		views.ChartLine{X1: driftLeft, Y1: driftTop + driftH, X2: driftLeft + pw, Y2: driftTop + driftH, Class: "axis"})
	for _, v := range []float64{0, top / 2, top} {
		c.Labels = append(c.Labels, views.ChartLabel{X: driftLeft - 4, Y: y(v) + 4, Text: fmt.Sprintf("%.3g", v), Anchor: "end", Class: "chart-small"})
	}
	every := max(1, L/12)
	for l := 0; l < L; l += every {
		c.Labels = append(c.Labels, views.ChartLabel{X: driftLeft + step*float64(2*l+1), Y: driftTop + driftH + 17, Text: fmt.Sprintf("L%d", l+1), Anchor: "middle", Class: "chart-small"})
	}
	c.Labels = append(c.Labels, views.ChartLabel{X: driftLeft + pw/2, Y: driftTop + driftH + 36, Text: "layer (attention, then MLP)", Anchor: "middle", Class: "chart-small"})
	for k, r := range reps {
		cls := fmt.Sprintf("drift-%d", k%driftColours)
		dx := (float64(k) - float64(len(reps)-1)/2) * min(4, step/float64(len(reps)+1))
		var px, py float64
		for i := range 2 * L {
			d := r.Layers[i/2].Attn
			where := "attention"
			if i%2 == 1 {
				d, where = r.Layers[i/2].MLP, "the MLP"
			}
			s := quantlens.SpreadOf(d.RelErr)
			x := driftLeft + step*(float64(i)+0.5) + dx
			c.Lines = append(c.Lines, views.ChartLine{X1: x, Y1: y(s.Min), X2: x, Y2: y(s.Max), Class: cls + " whisker"})
			if i > 0 {
				c.Lines = append(c.Lines, views.ChartLine{X1: px, Y1: py, X2: x, Y2: y(s.Median), Class: cls})
			}
			c.Rects = append(c.Rects, views.ChartRect{X: x - 2.5, Y: y(s.Median) - 2.5, W: 5, H: 5, Class: cls,
				Tip: fmt.Sprintf("%s, layer %d after %s: median %.4f (%.4f to %.4f)", types[k], i/2+1, where, s.Median, s.Min, s.Max)})
			px, py = x, y(s.Median)
		}
		ly := driftTop + 10 + 18*float64(k)
		c.Lines = append(c.Lines, views.ChartLine{X1: driftW - driftRight + 8, Y1: ly - 4, X2: driftW - driftRight + 26, Y2: ly - 4, Class: cls})
		c.Labels = append(c.Labels, views.ChartLabel{X: driftW - driftRight + 30, Y: ly, Text: types[k], Anchor: "start", Class: "chart-small"})
	}
	return c
}

// driftColours is how many line colours the stylesheet has (drift-0 …).
const driftColours = 6

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1e-6 for 0).
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 1e-6
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

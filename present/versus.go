package present

import (
	"fmt"
	"math"

	"stepthrough/engine/model"
	"stepthrough/engine/quantize"
	"stepthrough/engine/quantlens"
	"stepthrough/engine/sample"
	"stepthrough/engine/trace"
	"stepthrough/views"
)

// The Explorer beside another weight type (session.Versus): the current
// stage's vectors under the run's model and under the model converted to
// the view's type, their difference, the next-token distributions under
// both, and the residual stream's drift after each layer so far (also
// marked on the model map).

// versusTops is how many of the likeliest tokens the comparison lists.
const versusTops = 8

// picker offers the types a run can be compared with (a speculative run,
// whose steps are rounds of two models, refuses one in words).
func (s *snap) picker() *views.VersusPicker {
	return &views.VersusPicker{Types: quantize.Targets, Chosen: s.View.Vs}
}

// versus is the current stage beside its value under the view's type
// (nil without one).
func (s *snap) versus(st *trace.Step, stage trace.Stage) *views.Versus {
	v := s.Versus
	if v == nil || v.Step == nil {
		return nil
	}
	o := v.Step
	x := &views.Versus{Type: v.Type, Model: v.Model, Own: model.Summarize(s.Model.File).Type}
	dist := false // the next-token distributions: from the logits on
	switch stage.Name {
	case trace.StageTokenize:
		x.What = "The tokenizer is the model file's own under both types, so the tokens are the same: the types part from the embedding on."
	case trace.StageEmbed:
		x.What = "The input to the first layer at the pass's last position: the token's row of the embedding table (with its position's row, where the model learns one), read from each type's tables."
		if st.Embed != nil && o.Embed != nil {
			x.Rows = rowsOf(x, []pair{{"the input to layer 1", lastOf(st.Embed.Input), lastOf(o.Embed.Input)}})
		}
	case trace.StageAttention, trace.StageMLP:
		x.What, x.Rows = s.versusLayer(x, st, o, stage)
	case trace.StageKV:
		x.What, x.Rows = s.versusKV(x, st, o)
		dist = true
	default:
		x.What = "The next-token distribution at temperature 1 from each type's logits (the sampler's settings aside)."
		dist = true
	}
	if dist && st.Logits != nil && o.Logits != nil {
		s.versusDist(x, st.Logits.Logits, o.Logits.Logits)
	}
	x.Drift = driftSoFar(st, o, stage)
	return x
}

// versusLayer compares a layer's attention (the shown head's weights in
// the last row, the block's output, the stream after it) or its MLP.
func (s *snap) versusLayer(x *views.Versus, st, o *trace.Step, stage trace.Stage) (string, []views.VersusRow) {
	a, b := layerOf(st, stage.Layer), layerOf(o, stage.Layer)
	if a == nil || b == nil {
		return "", nil
	}
	n := stage.Layer + 1
	if stage.Name == trace.StageMLP {
		var rows []pair
		if a.MLP != nil && b.MLP != nil {
			rows = append(rows, pair{fmt.Sprintf("layer %d's MLP output", n), lastOf(a.MLP.Out), lastOf(b.MLP.Out)})
		}
		if a.ResidMLP != nil && b.ResidMLP != nil {
			rows = append(rows, pair{fmt.Sprintf("the residual stream after layer %d", n), lastOf(a.ResidMLP.X), lastOf(b.ResidMLP.X)})
		}
		return fmt.Sprintf("Layer %d's MLP at the pass's last position, under both types.", n), rowsOf(x, rows)
	}
	var rows []pair
	if a.Attention != nil && b.Attention != nil && len(a.Attention.Weights) > 0 && len(b.Attention.Weights) > 0 {
		h := min(s.View.Head, a.Attention.Heads-1)
		wa, wb := a.Attention.Weights[len(a.Attention.Weights)-1], b.Attention.Weights[len(b.Attention.Weights)-1]
		rows = append(rows, pair{fmt.Sprintf("head %d's attention weights", h+1), wa[h], wb[h]})
		rows = append(rows, pair{fmt.Sprintf("layer %d's attention output", n), lastOf(a.Attention.Out), lastOf(b.Attention.Out)})
	}
	if a.ResidAttn != nil && b.ResidAttn != nil {
		rows = append(rows, pair{fmt.Sprintf("the residual stream after layer %d's attention", n), lastOf(a.ResidAttn.X), lastOf(b.ResidAttn.X)})
	}
	return fmt.Sprintf("Layer %d's attention in the pass's last row, under both types.", n), rowsOf(x, rows)
}

// versusKV compares the key and value rows the pass appended last, in the
// first and the last layer.
func (s *snap) versusKV(x *views.Versus, st, o *trace.Step) (string, []views.VersusRow) {
	var rows []pair
	for _, l := range []int{0, s.Model.Config.Layers - 1} {
		a, b := layerOf(st, l), layerOf(o, l)
		if a == nil || b == nil || len(a.NewK) == 0 || len(b.NewK) == 0 {
			continue
		}
		rows = append(rows, pair{fmt.Sprintf("layer %d's new key row", l+1), lastOf(a.NewK), lastOf(b.NewK)},
			pair{fmt.Sprintf("layer %d's new value row", l+1), lastOf(a.NewV), lastOf(b.NewV)})
		if s.Model.Config.Layers == 1 {
			break
		}
	}
	return "The cache rows the pass appended at its last position, in the first and the last layer.", rowsOf(x, rows)
}

// versusDist lists the likeliest tokens under the run's type with their
// probability under both, and the KL divergence of the other from it.
func (s *snap) versusDist(x *views.Versus, own, other []float32) {
	if len(own) != len(other) {
		return
	}
	po, pv := sample.Probabilities(own, 1), sample.Probabilities(other, 1)
	top, vtop := sample.TopN(po, versusTops), sample.TopN(pv, 1)
	if len(top) == 0 || len(vtop) == 0 {
		return
	}
	for _, id := range top {
		x.Tops = append(x.Tops, views.VersusTop{Piece: s.piece(id), Own: float64(po[id]), Other: float64(pv[id])})
	}
	x.HaveDist, x.OwnTop, x.VsTop = true, s.piece(top[0]), s.piece(vtop[0])
	x.KL = sample.KL(sample.LogSoftmax(own), sample.LogSoftmax(other))
}

// lastOf is the last kept row.
func lastOf(rows []trace.Vec) []float32 {
	if len(rows) == 0 {
		return nil
	}
	return rows[len(rows)-1]
}

// pair is one vector of a stage under the run's type and the other.
type pair struct {
	label      string
	own, other []float32
}

// rowsOf compares each {label, own, other} (skipping a pair of different
// lengths: the shapes are one model's, so none is expected).
func rowsOf(x *views.Versus, pairs []pair) []views.VersusRow {
	var out []views.VersusRow
	for _, p := range pairs {
		label, a, b := p.label, p.own, p.other
		if len(a) == 0 || len(a) != len(b) {
			continue
		}
		diff := make([]float32, len(a))
		var maxAbs float64
		for i := range a {
			diff[i] = b[i] - a[i]
			maxAbs = math.Max(maxAbs, math.Abs(float64(diff[i])))
		}
		r := views.VersusRow{Label: label, Own: vecRow(label+" — "+x.Own, a), Other: vecRow(label+" — "+x.Type, b),
			Diff: vecRow(fmt.Sprintf("%s — difference (%s − %s)", label, x.Type, x.Own), diff), MaxAbs: maxAbs}
		r.RelErr, r.Cosine = quantlens.RelErrCos(a, b)
		out = append(out, r)
	}
	return out
}

// driftSoFar is the residual stream's drift at the pass's last position
// after every block the viewer has passed, this stage's included.
func driftSoFar(st, o *trace.Step, stage trace.Stage) []views.VersusDrift {
	var out []views.VersusDrift
	add := func(layer int, block string, a, b *trace.Residual) {
		if a == nil || b == nil {
			return
		}
		rel, cos := quantlens.RelErrCos(lastOf(a.X), lastOf(b.X))
		out = append(out, views.VersusDrift{Layer: layer + 1, Block: block, RelErr: rel, Cosine: cos, Level: views.DriftLevel(rel)})
	}
	for _, L := range st.Layers {
		Lo := layerOf(o, L.Index)
		if Lo == nil || !passed(stage, L.Index, trace.StageAttention) {
			break
		}
		add(L.Index, "attention", L.ResidAttn, Lo.ResidAttn)
		if !passed(stage, L.Index, trace.StageMLP) {
			break
		}
		add(L.Index, "MLP", L.ResidMLP, Lo.ResidMLP)
	}
	return out
}

// passed reports whether the viewer at stage has reached layer's block.
func passed(stage trace.Stage, layer int, block trace.Kind) bool {
	switch stage.Name {
	case trace.StageTokenize, trace.StageEmbed:
		return false
	case trace.StageAttention:
		return layer < stage.Layer || (layer == stage.Layer && block == trace.StageAttention)
	case trace.StageMLP:
		return layer <= stage.Layer
	}
	return true
}

// driftMarks are the model map's marks of the drift so far, by part.
func driftMarks(d []views.VersusDrift) map[string]int {
	if len(d) == 0 {
		return nil
	}
	m := map[string]int{}
	for _, x := range d {
		name := trace.StageAttention
		if x.Block == "MLP" {
			name = trace.StageMLP
		}
		m[views.MapKey(views.Stage{Name: string(name), Layer: x.Layer - 1, SamplerStep: -1})] = x.Level
	}
	return m
}

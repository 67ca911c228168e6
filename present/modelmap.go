package present

import (
	"fmt"
	"math"
	"slices"

	"stepthrough/engine/intervene"
	"stepthrough/engine/model"

	"stepthrough/engine/trace"
	"stepthrough/views"
)

// modelMap fills the model map from the loaded model's configuration and
// the current step: its token count, cache, sampler counts and draw.
func (s *snap) modelMap(st *trace.Step, stages []views.Stage, si int) *views.ModelMap {
	c, sp := s.Model.Config, s.Model.Spec
	m := &views.ModelMap{Arch: c.Arch, Layers: c.Layers, Embd: c.Embd, FFN: c.FFN, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim,
		Vocab: c.Vocab, Tokens: st.N, Norm: "RMSNorm", MLPKind: mlpKinds[sp.FFN], PosEmbed: sp.PosEmbd,
		Local: c.Local, Window: c.Window, Score: scoreFormula(c),
		Temperature: Form(s.Run).Temperature, Present: map[string]int{}, Here: stages[si]}
	if sp.Norm == model.LayerNorm {
		m.Norm = "LayerNorm"
	}
	for _, f := range s.Model.Features() {
		m.Family = append(m.Family, views.MapFeature{Key: f.Key, Name: f.Name, Why: f.Why})
	}
	if si > 0 {
		m.Prev, m.HasPrev = stages[si-1], true
	}
	for _, x := range stages {
		m.Present[views.MapKey(x)] = x.Rank
	}
	for _, L := range st.Layers {
		m.Cached, m.KVBytes = L.KVLen, L.KVBytesUsed
	}
	for _, r := range st.Sampler {
		m.Filters = append(m.Filters, views.MapFilter{Name: string(r.Step), Setting: s.setting(r.Step), In: r.BeforeCount, Out: r.AfterCount, Skipped: r.Skipped})
	}
	m.Where = mapWhere(m)
	if s.Edits != nil {
		m.Off = map[string]bool{}
		for _, e := range s.Edits.Edits {
			stage := trace.StageAttention
			if e.Site == intervene.Unit || e.Site == intervene.MLP || e.Site == intervene.Resid { // the stream after the layer: after its MLP
				stage = trace.StageMLP
			}
			m.Off[views.MapKey(views.Stage{Name: string(stage), Layer: e.Layer, SamplerStep: -1})] = true
		}
	}
	return m
}

// mapWhere says in words where the viewer is, for the collapsed map.
func mapWhere(m *views.ModelMap) string {
	h := m.Here
	switch trace.Kind(h.Name) {
	case trace.StageAttention:
		return fmt.Sprintf("layer %d of %d · attention", h.Layer+1, m.Layers)
	case trace.StageMLP:
		return fmt.Sprintf("layer %d of %d · MLP", h.Layer+1, m.Layers)
	case trace.StageSampler:
		if h.SamplerStep >= 0 && h.SamplerStep < len(m.Filters) {
			return fmt.Sprintf("sampler step %d of %d · %s", h.SamplerStep+1, len(m.Filters), m.Filters[h.SamplerStep].Name)
		}
	case trace.StageKV:
		return "KV cache append"
	}
	return h.Name
}

// mlpKinds are the MLP formulas the map names.
var mlpKinds = map[model.FFNKind]string{
	model.SwiGLU: "SwiGLU: silu(gate) · up", model.GELU: "GELU", model.GeGLU: "GeGLU: gelu(gate) · up",
	model.SwiGLUFused: "SwiGLU: silu(gate) · up, one gate-up matrix",
}

// scoreFormula is how the model forms an attention score, as the map's
// hovers write it.
func scoreFormula(c *model.Config) string {
	f := fmt.Sprintf("q·k/√%d", c.HeadDim)
	if c.AttnScale != float32(1/math.Sqrt(float64(c.HeadDim))) {
		f = fmt.Sprintf("q·k × %.4g", c.AttnScale)
	}
	if c.AttnSoftcap != 0 {
		f = fmt.Sprintf("%g·tanh((%s)/%g)", c.AttnSoftcap, f, c.AttnSoftcap)
	}
	return f
}

// stageIndex is the index of the first stage of kind k, or -1.
func stageIndex(stages []views.Stage, k trace.Kind) int {
	return slices.IndexFunc(stages, func(x views.Stage) bool { return x.Name == string(k) })
}

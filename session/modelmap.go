package session

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"stepthrough/engine/model"
	"stepthrough/engine/spec"

	"stepthrough/engine/trace"
	"stepthrough/views"
)

// modelMap fills the model map from the loaded model's configuration and
// the current step: its token count, cache, sampler counts and draw.
func (s *Session) modelMap(st *trace.Step, stages []views.Stage, si int) *views.ModelMap {
	c, sp := s.m.Config, s.m.Spec
	m := &views.ModelMap{Arch: c.Arch, Layers: c.Layers, Embd: c.Embd, FFN: c.FFN, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim,
		Vocab: c.Vocab, Tokens: st.N, Norm: "RMSNorm", MLPKind: mlpKinds[sp.FFN], PosEmbed: sp.PosEmbd,
		Local: c.Local, Window: c.Window, Score: scoreFormula(c),
		Temperature: Form(s.run).Temperature, Present: map[string]bool{}, Here: stages[si]}
	if sp.Norm == model.LayerNorm {
		m.Norm = "LayerNorm"
	}
	for _, f := range s.m.Features() {
		m.Family = append(m.Family, views.MapFeature{Key: f.Key, Name: f.Name, Why: f.Why})
	}
	if si > 0 {
		m.Prev, m.HasPrev = stages[si-1], true
	}
	for _, x := range stages {
		m.Present[views.MapKey(x)] = true
	}
	for _, L := range st.Layers {
		m.Cached, m.KVBytes = L.KVLen, L.KVBytesUsed
	}
	for _, r := range st.Sampler {
		m.Filters = append(m.Filters, views.MapFilter{Name: string(r.Step), Setting: s.setting(r.Step), In: r.BeforeCount, Out: r.AfterCount, Skipped: r.Skipped})
	}
	return m
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

// gotoStage moves, within the current token step, to the stage a click on
// the model map or the pipeline strip names: stage, and its 1-based layer
// or filter ("0" or absent where none applies).
func (s *Session) gotoStage(get spec.Getter) error {
	name, _ := get("stage")
	k := trace.Kind(name)
	if !slices.Contains(trace.Kinds, k) {
		return errorf("there is no stage %q", name)
	}
	num := func(key string) (int, error) {
		v, ok := get(key)
		if !ok || v == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1<<20 {
			return 0, errorf("%s must be a whole number from 1, not %q", key, v)
		}
		return n, nil
	}
	layer, err := num("layer")
	if err != nil {
		return err
	}
	filter, err := num("filter")
	if err != nil {
		return err
	}
	if len(s.cur.Steps) == 0 {
		return errorf("run a prompt first")
	}
	step, _ := s.cur.Position()
	for i, st := range trace.Stages(s.cur.Steps[step]) {
		if st.Name == k && (layer == 0 || st.Layer == layer-1) && (filter == 0 || st.SamplerStep == filter-1) {
			s.cur.Seek(step, i)
			return nil
		}
	}
	return errorf("this token step has no %s stage there", name)
}

package present

import (
	"fmt"
	"strconv"

	"stepthrough/engine/memcalc"
	"stepthrough/engine/quantize"
	"stepthrough/views"
)

// Memory fills the memory page's results: the model's shape and what
// memcalc figures from it and the page's inputs.
func Memory(p *views.MemoryPage, shape memcalc.Shape, in memcalc.Inputs) {
	p.Shape = []views.Metric{{Name: "parameters", Value: memcalc.Count(shape.Params)}, {Name: "layers", Value: strconv.Itoa(shape.Layers)},
		{Name: "query heads / KV heads", Value: fmt.Sprintf("%d / %d", shape.Heads, shape.KVHeads)}, {Name: "head size", Value: strconv.Itoa(shape.HeadDim)},
		{Name: "vocabulary", Value: strconv.Itoa(shape.Vocab)}, {Name: "trained context", Value: strconv.Itoa(shape.Context)}}
	for _, f := range memcalc.Calculate(shape, in) {
		p.Figures = append(p.Figures, views.MemoryFigure{Name: f.Name, Formula: f.Formula})
	}
}

// MemoryMeasured says how the page measured a model file's throughput:
// runs (tokens/s, sorted) of tokens each, the median used.
func MemoryMeasured(source string, runs []float64, tokens int) string {
	return fmt.Sprintf("Throughput measured now: %s decoded %d runs of %d tokens (after 8 untimed) on this server, one user, its weights as stored: %.1f tokens/s, the median (slowest run %.1f, fastest %.1f).",
		source, len(runs), tokens, runs[len(runs)/2], runs[0], runs[len(runs)-1])
}

// MemoryForm is the memory page's form as the viewer filled it in (get
// reads a field; an empty one takes its default): the presets and the
// offered models to choose from, and the precisions.
func MemoryForm(get func(field string) string, models []string) views.MemoryPage {
	p := views.MemoryPage{Source: get("source"), Type: get("type"), KV: get("kv"), Context: get("ctx"), Batch: get("batch"),
		Memory: get("memory"), Price: get("price"), TPS: get("tps")}
	for _, pr := range memcalc.Presets {
		p.Sources = append(p.Sources, pr.Name)
	}
	p.Sources = append(p.Sources, models...)
	p.Types = append([]string{"F32"}, quantize.Targets...)
	defaults := map[*string]string{&p.Source: memcalc.Presets[0].Name, &p.Type: "F16", &p.KV: "2", &p.Context: "4096", &p.Batch: "1", &p.Memory: "80", &p.Price: "2"}
	for dst, v := range defaults {
		if *dst == "" {
			*dst = v
		}
	}
	return p
}

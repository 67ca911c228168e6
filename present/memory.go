package present

import (
	"fmt"
	"strconv"

	"stepthrough/engine/memcalc"
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

package present

import (
	"math"
	"slices"
	"strings"
	"testing"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/engine/quantize"
	"stepthrough/registry"
	"stepthrough/views"
)

// The histogram shows the first block of the first matrix the conversion
// changed, before and after, in bins on one scale: the tallest bar is 1,
// and each side counts every value of the block.
func TestQuantHistogram(t *testing.T) {
	reg := smallModel(t)
	base, err := reg.Get("m.gguf")
	if err != nil {
		t.Fatal(err)
	}
	qm, err := reg.Quantize("m.gguf", "Q4_0")
	if err != nil {
		t.Fatal(err)
	}
	var p views.QuantPage
	histogram(&p, base, qm.Loaded.Model, qm.Report)
	if !strings.HasSuffix(p.HistName, ".weight") || len(p.HistBefore) != histogramBins || len(p.HistAfter) != histogramBins {
		t.Fatalf("histogram of %q: %d and %d bins", p.HistName, len(p.HistBefore), len(p.HistAfter))
	}
	if top := max(slices.Max(p.HistBefore), slices.Max(p.HistAfter)); top != 1 {
		t.Errorf("the tallest bar is %g, want 1", top)
	}
	var before, after float64
	for i := range histogramBins {
		before, after = before+p.HistBefore[i], after+p.HistAfter[i]
	}
	if math.Abs(before-after) > 1e-9 {
		t.Errorf("the sides count %g and %g (scaled): want the same block's values", before, after)
	}
	bt, _ := base.File.Tensor(p.HistName)
	if cols := int(bt.Dims[0]); p.HistBlockN != float64(min(cols, 256)) || p.HistMin >= p.HistMax {
		t.Errorf("block of %g values from %g to %g; want the first row's %d", p.HistBlockN, p.HistMin, p.HistMax, cols)
	}
	var unchanged views.QuantPage
	histogram(&unchanged, base, base, &quantize.Report{Tensors: []quantize.Tensor{{Name: p.HistName, From: quant.F32, To: quant.F32}}})
	if unchanged.HistName != "" {
		t.Errorf("a tensor the conversion kept has a histogram: %q", unchanged.HistName)
	}
}

// smallModel offers one small synthesized model, m.gguf.
func smallModel(t *testing.T) *registry.Registry {
	return synthRegistry(t, "m.gguf", model.SynthOptions{Arch: "qwen2", Embd: 64, Layers: 1, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 600, Context: 64, Type: quant.F32})
}

// Each precision's candidates at a step are scaled to its most likely
// one.
func TestQuantStepRowsScaleToTheTop(t *testing.T) {
	res := []quantize.Result{{Type: "Q8_0", Steps: []quantize.StepStat{{KL: 0.01, Top: []quantize.Candidate{{ID: 1, P: 0.5}, {ID: 2, P: 0.25}}}}}}
	rows := quantStepRows(res, 0, func(id int32) string { return string(rune('a' + id)) })
	if len(rows) != 1 || len(rows[0].Top) != 2 || rows[0].Top[0].Width != 100 || rows[0].Top[1].Width != 50 || rows[0].Top[1].Piece != "c" {
		t.Errorf("rows: %+v", rows)
	}
}

package present

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/engine/quantize"
	"stepthrough/views"
)

// The quantization page: one model at several precisions, the same
// prompt through each (quantize.Compare's results), the step's
// candidates, the converted tensors and one block's values before and
// after.

// QuantForm is the page's form as the viewer filled it in: the models
// offered, the precisions there are and those chosen.
func QuantForm(models []string, model, prompt string, n int, types []string) views.QuantPage {
	p := views.QuantPage{Models: models, AllTypes: quantize.Targets, Model: model, Prompt: prompt, N: strconv.Itoa(n), Selected: map[string]bool{}}
	for _, t := range types {
		p.Selected[t] = true
	}
	return p
}

// QuantRun is what the page compared: each precision's result (the model
// as stored first), the conversions' reports by precision, the model as
// stored and its size.
type QuantRun struct {
	Results []quantize.Result
	Reports map[string]*quantize.Report
	Base    *model.Model
	Bytes   int64
	Types   []string // the precisions chosen, in order
}

// QuantLinks address the page at a step with a precision's tensors listed.
type QuantLinks func(step int, tensors string) string

// QuantResults fills p from run at step (clamped to the generation)
// listing the tensors of precision tensors (whose model is conv).
func QuantResults(p *views.QuantPage, run QuantRun, step int, tensors string, conv *model.Model, link QuantLinks) {
	tk := run.Base.Tokenizer
	piece := func(id int32) string { return views.PieceLabel(tk.Display(id)) }
	p.KVBytesPerToken = run.Base.KVBytesPerToken()
	for _, r := range run.Results {
		p.Rows = append(p.Rows, views.QuantRow{Type: r.Type, MiB: float64(r.Bytes) / (1 << 20), Text: tk.Decode(r.Own), Divergence: r.Divergence,
			MeanKL: r.MeanKL, FlipRate: r.FlipRate, PrefillMS: r.PrefillMS, DecodeMS: r.DecodeMS, Ratio: float64(r.Bytes) / float64(run.Bytes),
			PrefillRange: [2]float64{slices.Min(r.PrefillRuns), slices.Max(r.PrefillRuns)}, DecodeRange: [2]float64{slices.Min(r.DecodeRuns), slices.Max(r.DecodeRuns)}})
	}
	refToks := run.Results[0].Own
	p.Steps = len(refToks)
	p.Step = min(step, p.Steps-1)
	for _, id := range refToks {
		p.Reference = append(p.Reference, piece(id))
	}
	p.Prev, p.Next = link(max(0, p.Step-1), tensors), link(min(p.Steps-1, p.Step+1), tensors)
	p.StepRows = quantStepRows(run.Results, p.Step, piece)
	p.TensorType = tensors
	for _, t := range run.Types {
		if t != tensors {
			p.TensorLinks = append(p.TensorLinks, views.QuantLink{Type: t, URL: link(p.Step, t)})
		}
	}
	for _, t := range run.Reports[tensors].Tensors {
		p.Tensors = append(p.Tensors, views.QuantTensor{Name: t.Name, From: t.From.String(), To: t.To.String(), RMSE: t.RMSE})
	}
	histogram(p, run.Base, conv, run.Reports[tensors])
}

// quantStepRows are each precision's candidates at step, the bars scaled
// to its most likely one.
func quantStepRows(res []quantize.Result, step int, piece func(int32) string) []views.QuantStepRow {
	var rows []views.QuantStepRow
	for _, r := range res {
		st := r.Steps[step]
		row := views.QuantStepRow{Type: r.Type, KL: st.KL, Flipped: st.Flipped, Overlap: st.Overlap}
		for _, cnd := range st.Top {
			row.Top = append(row.Top, views.Bar{ID: cnd.ID, Piece: piece(cnd.ID), Value: cnd.P, Width: 100 * cnd.P / math.Max(st.Top[0].P, 1e-12)})
		}
		rows = append(rows, row)
	}
	return rows
}

// histogramBins is how many bins the before/after histogram has.
const histogramBins = 32

// histogram fills the page's before/after histogram of one block: the
// first 256 values of the first matrix the conversion changed.
func histogram(p *views.QuantPage, base, conv *model.Model, rep *quantize.Report) {
	for _, t := range rep.Tensors {
		if t.From == t.To || !strings.HasSuffix(t.Name, ".weight") {
			continue
		}
		before, after, ok := firstRows(base, conv, t.Name)
		if !ok {
			return
		}
		n := min(len(before), 256)
		before, after = before[:n], after[:n]
		lo, hi := slices.Min(before), slices.Max(before)
		hb, ha := make([]float64, histogramBins), make([]float64, histogramBins)
		bin := func(v float32) int {
			return min(histogramBins-1, max(0, int(float64(v-lo)/float64(hi-lo+1e-12)*histogramBins)))
		}
		for i := range n {
			hb[bin(before[i])]++
			ha[bin(after[i])]++
		}
		top := math.Max(slices.Max(hb), slices.Max(ha))
		for i := range histogramBins {
			hb[i], ha[i] = hb[i]/top, ha[i]/top
		}
		p.HistName, p.HistBefore, p.HistAfter = t.Name, hb, ha
		p.HistMin, p.HistMax, p.HistBlockN = float64(lo), float64(hi), float64(n)
		return
	}
}

// firstRows are tensor name's first row in base and in conv, dequantized
// (false when either does not dequantize).
func firstRows(base, conv *model.Model, name string) (before, after []float32, ok bool) {
	bt, _ := base.File.Tensor(name)
	ct, _ := conv.File.Tensor(name)
	cols := int(bt.Dims[0])
	before, after = make([]float32, cols), make([]float32, cols)
	rbB, _ := bt.Type.RowBytes(cols)
	rbC, _ := ct.Type.RowBytes(cols)
	if quant.Dequantize(bt.Type, base.File.TensorData(bt)[:rbB], before) != nil || quant.Dequantize(ct.Type, conv.File.TensorData(ct)[:rbC], after) != nil {
		return nil, nil, false
	}
	return before, after, true
}

package server

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/engine/quantize"
	"stepthrough/engine/quantlens"
	"stepthrough/present"
	"stepthrough/views"
)

// The quantization page: one model at several precisions (converted in
// memory by package quantize), the same prompt through each.

var defaultQuantTypes = []string{"Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0"}

const (
	maxQuantTokens = 64
	maxQuantPrompt = 500
)

// quantQuery is a parsed /quantization request.
type quantQuery struct {
	model, prompt, tensors string
	n, step                int
	types                  []string
}

func (q quantQuery) link(step int, tensors string) string {
	v := url.Values{"model": {q.model}, "prompt": {q.prompt}, "n": {strconv.Itoa(q.n)}, "types": q.types, "step": {strconv.Itoa(step)}, "tensors": {tensors}}
	return "/quantization?" + v.Encode()
}

func (s *Server) parseQuantQuery(c echo.Context) (quantQuery, error) {
	qp := c.QueryParams()
	q := quantQuery{model: qp.Get("model"), prompt: qp.Get("prompt"), n: 16, tensors: qp.Get("tensors")}
	if q.model == "" {
		q.model = s.reg.Default()
	}
	if q.prompt == "" {
		q.prompt = "Once upon a time, there was a girl named"
	}
	if len(q.prompt) > maxQuantPrompt {
		return q, fmt.Errorf("the prompt is %d bytes; the limit is %d", len(q.prompt), maxQuantPrompt)
	}
	for _, t := range qp["types"] {
		tt, err := quantize.ParseTarget(t)
		if err != nil {
			return q, err
		}
		if !slices.Contains(q.types, tt) {
			q.types = append(q.types, tt)
		}
	}
	if len(q.types) == 0 {
		q.types = defaultQuantTypes
	}
	for key, dst := range map[string]*int{"n": &q.n, "step": &q.step} {
		if v := qp.Get(key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || (key == "n" && (n < 1 || n > maxQuantTokens)) {
				return q, fmt.Errorf("%s %q: a whole number (tokens: 1 to %d)", key, v, maxQuantTokens)
			}
			*dst = n
		}
	}
	if q.tensors != "" && !slices.Contains(q.types, q.tensors) {
		return q, fmt.Errorf("tensors %q: one of the compared types", q.tensors)
	}
	if q.tensors == "" {
		q.tensors = q.types[len(q.types)-1]
	}
	return q, nil
}

func (s *Server) quantPage(c echo.Context) error {
	q, err := s.parseQuantQuery(c)
	p := views.QuantPage{Models: s.reg.Names(), AllTypes: quantize.Targets, Model: q.model, Prompt: q.prompt, N: strconv.Itoa(q.n), Selected: map[string]bool{}}
	for _, t := range q.types {
		p.Selected[t] = true
	}
	if err != nil {
		p.Error = err.Error()
		return renderPageStatus(c, http.StatusBadRequest, views.QuantPageView(p))
	}
	if err := s.withWork(c, func(ctx context.Context) error { return s.fillQuantPage(ctx, q, &p) }); err != nil {
		p.Error = err.Error()
		return renderPageStatus(c, http.StatusBadRequest, views.QuantPageView(p))
	}
	return renderPage(c, views.QuantPageView(p))
}

func (s *Server) fillQuantPage(ctx context.Context, q quantQuery, p *views.QuantPage) error {
	base, err := s.reg.Get(q.model)
	if err != nil {
		return err
	}
	ref, err := s.reg.Engine(q.model, "cpu")
	if err != nil {
		return err
	}
	var size int64
	for _, t := range base.File.Tensors {
		size += int64(t.Size)
	}
	variants := []quantize.Variant{{Type: "as stored (" + model.Summarize(base.File).Type + ")", Loaded: ref, Bytes: size}}
	reports := map[string]*quantize.Report{}
	for _, t := range q.types {
		qm, err := s.reg.Quantize(q.model, t)
		if err != nil {
			return err
		}
		variants = append(variants, quantize.Variant{Type: t, Loaded: qm.Loaded, Bytes: qm.Bytes})
		reports[t] = qm.Report
	}
	prompt := base.Tokenizer.EncodeIDs(q.prompt, true)
	if len(prompt)+q.n > min(base.Config.ContextLen, 1024) {
		return fmt.Errorf("the prompt is %d tokens; with %d more it does not fit the context", len(prompt), q.n)
	}
	res, err := quantize.Compare(ctx, variants, prompt, q.n)
	if err != nil {
		return err
	}
	if err := s.fillQuantDrift(ctx, p, variants, q.types, prompt); err != nil {
		return err
	}
	tk := base.Tokenizer
	piece := func(id int32) string { return views.PieceLabel(tk.Display(id)) }
	p.KVBytesPerToken = base.KVBytesPerToken()
	for _, r := range res {
		p.Rows = append(p.Rows, views.QuantRow{Type: r.Type, MiB: float64(r.Bytes) / (1 << 20), Text: tk.Decode(r.Own), Divergence: r.Divergence,
			MeanKL: r.MeanKL, FlipRate: r.FlipRate, PrefillMS: r.PrefillMS, DecodeMS: r.DecodeMS, Ratio: float64(r.Bytes) / float64(size),
			PrefillRange: [2]float64{slices.Min(r.PrefillRuns), slices.Max(r.PrefillRuns)}, DecodeRange: [2]float64{slices.Min(r.DecodeRuns), slices.Max(r.DecodeRuns)}})
	}
	refToks := res[0].Own
	p.Steps = len(refToks)
	p.Step = min(q.step, p.Steps-1)
	for _, id := range refToks {
		p.Reference = append(p.Reference, piece(id))
	}
	p.Prev, p.Next = q.link(max(0, p.Step-1), q.tensors), q.link(min(p.Steps-1, p.Step+1), q.tensors)
	for _, r := range res {
		st := r.Steps[p.Step]
		row := views.QuantStepRow{Type: r.Type, KL: st.KL, Flipped: st.Flipped, Overlap: st.Overlap}
		for _, cnd := range st.Top {
			row.Top = append(row.Top, views.Bar{ID: cnd.ID, Piece: piece(cnd.ID), Value: cnd.P, Width: 100 * cnd.P / math.Max(st.Top[0].P, 1e-12)})
		}
		p.StepRows = append(p.StepRows, row)
	}
	p.TensorType = q.tensors
	for _, t := range q.types {
		if t != q.tensors {
			p.TensorLinks = append(p.TensorLinks, views.QuantLink{Type: t, URL: q.link(p.Step, t)})
		}
	}
	for _, t := range reports[q.tensors].Tensors {
		p.Tensors = append(p.Tensors, views.QuantTensor{Name: t.Name, From: t.From.String(), To: t.To.String(), RMSE: t.RMSE})
	}
	qm, _ := s.reg.Quantize(q.model, q.tensors)
	histogram(p, base, qm.Loaded.Model, reports[q.tensors])
	return nil
}

// fillQuantDrift reads the prompt (its first quantlens.MaxTokens tokens)
// with the model as stored and with each precision, and compares them
// layer by layer; over the work budget (the logit lens after every layer
// of a large vocabulary) the section says so instead.
func (s *Server) fillQuantDrift(ctx context.Context, p *views.QuantPage, variants []quantize.Variant, types []string, prompt []int32) error {
	ids := prompt[:min(len(prompt), quantlens.MaxTokens)]
	m := variants[0].Loaded.Model
	what := fmt.Sprintf("the drift by layer reads %d tokens %d times with the logit lens after each of %d layers", len(ids), len(variants), m.Config.Layers)
	work := int64(len(variants)) * (m.PassWork(len(ids), 0, len(ids)) + m.LensWork(len(ids)))
	if err := s.checkWork(what, work, "use a shorter prompt or fewer precisions"); err != nil {
		p.Drift = views.QuantDrift{Note: err.Error()}
		return nil
	}
	ref, err := quantlens.Run(ctx, variants[0].Loaded, ids)
	if err != nil {
		return err
	}
	var reps []*quantlens.Report
	for _, v := range variants[1:] {
		pass, err := quantlens.Run(ctx, v.Loaded, ids)
		if err != nil {
			return fmt.Errorf("%s: %w", v.Type, err)
		}
		r, err := quantlens.Compare(ref, pass)
		if err != nil {
			return err
		}
		reps = append(reps, r)
	}
	p.Drift = present.QuantDrift(types, reps)
	return nil
}

// histogram fills the page's before/after histogram of one block: the
// first 256 values of the first matrix the conversion changed.
func histogram(p *views.QuantPage, base, conv *model.Model, rep *quantize.Report) {
	for _, t := range rep.Tensors {
		if t.From == t.To || !strings.HasSuffix(t.Name, ".weight") {
			continue
		}
		bt, _ := base.File.Tensor(t.Name)
		ct, _ := conv.File.Tensor(t.Name)
		cols := int(bt.Dims[0])
		before, after := make([]float32, cols), make([]float32, cols)
		rbB, _ := bt.Type.RowBytes(cols)
		rbC, _ := ct.Type.RowBytes(cols)
		if quant.Dequantize(bt.Type, base.File.TensorData(bt)[:rbB], before) != nil || quant.Dequantize(ct.Type, conv.File.TensorData(ct)[:rbC], after) != nil {
			return
		}
		n := min(cols, 256)
		before, after = before[:n], after[:n]
		lo, hi := slices.Min(before), slices.Max(before)
		const bins = 32
		hb, ha := make([]float64, bins), make([]float64, bins)
		bin := func(v float32) int { return min(bins-1, max(0, int(float64(v-lo)/float64(hi-lo+1e-12)*bins))) }
		for i := range n {
			hb[bin(before[i])]++
			ha[bin(after[i])]++
		}
		top := math.Max(slices.Max(hb), slices.Max(ha))
		for i := range bins {
			hb[i], ha[i] = hb[i]/top, ha[i]/top
		}
		p.HistName, p.HistBefore, p.HistAfter = t.Name, hb, ha
		p.HistMin, p.HistMax, p.HistBlockN = float64(lo), float64(hi), float64(n)
		return
	}
}

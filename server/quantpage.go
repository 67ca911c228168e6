package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"stepthrough/engine/model"
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
	p := present.QuantForm(s.reg.Names(), q.model, q.prompt, q.n, q.types)
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
	qm, err := s.reg.Quantize(q.model, q.tensors)
	if err != nil {
		return err
	}
	run := present.QuantRun{Results: res, Reports: reports, Base: base, Bytes: size, Types: q.types}
	present.QuantResults(p, run, q.step, q.tensors, qm.Loaded.Model, q.link)
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
		p.Drift.Note = err.Error()
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

package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"stepthrough/api"
	"stepthrough/engine"
	"stepthrough/engine/sample"
	"stepthrough/engine/serve"
	"stepthrough/session"
	"stepthrough/spec"
)

// apiProbe is a request's "stepthrough" extension made ready to run: the
// internals to record, the run carrying its interventions, and where
// its tokens' trace URLs point.
type apiProbe struct {
	st    *api.Stepthrough
	probe session.Probe
	iv    spec.Interventions // the run's Ablate, Steer and MeanOver, read
	lm    *engine.Loaded
	base  string // the request page's URL (trace_url)
}

// setupProbe checks x's extension against its model and the limits
// (indices, size, the lens's work, the interventions' syntax and shape)
// before anything runs; base is the server's URL as the client reached
// it. A request without the extension is left as it is.
func (s *Server) setupProbe(x *apiExchange, base string) *api.Error {
	st := x.req.Stepthrough
	if st == nil {
		return nil
	}
	lm := x.lm
	c := lm.Model.Config
	if e := st.Check((&apiProbe{lm: lm}).shape(x)); e != nil {
		return e
	}
	if st.LensTop > 0 {
		rows := x.req.N * x.gen.Max
		what := fmt.Sprintf("the logit lens of %d tokens × %d layers over a vocabulary of %d", rows, c.Layers, c.Vocab)
		if err := s.checkWork(what, lm.Model.LensWork(rows), "ask for fewer tokens (max_tokens, n)"); err != nil {
			return probeInvalid("stepthrough.logit_lens", err, "stepthrough_too_large")
		}
	}
	r := spec.Default(x.model)
	if err := r.SetInterventions(st.Ablate, st.Steer, st.MeanOver); err != nil {
		return probeInvalid(probeParam(err), err, "")
	}
	iv, err := r.Checked() // the mean ablation's text too
	if err != nil {
		return probeInvalid(probeParam(err), err, "")
	}
	if err := iv.Check(c.EditShape()); err != nil {
		return probeInvalid(probeParam(err), err, "")
	}
	x.probe = &apiProbe{st: st, iv: iv, lm: lm, base: base + "/requests/" + x.id,
		probe: session.Probe{Lens: st.LensTop, Layers: st.Layers, Heads: st.Heads, Norms: st.Norms}}
	f := r.Form() // the written forms, as read
	x.watch.Ablate, x.watch.Steer, x.watch.MeanOver, x.watch.Probed = f["ablate"], f["steer"], f["mean_over"], true
	return nil
}

// probeParam is the extension's field a run's validation error names.
func probeParam(err error) string {
	var pe *spec.Error
	if errors.As(err, &pe) {
		return "stepthrough." + strings.ReplaceAll(pe.Param, " ", "_")
	}
	return "stepthrough"
}

// probeInvalid is a 400 naming the extension's field at fault (and a
// code, when not "").
func probeInvalid(param string, err error, code string) *api.Error {
	e := &api.Error{Status: http.StatusBadRequest, Message: param + ": " + err.Error(), Type: "invalid_request_error", Param: &param}
	if code != "" {
		e.Code = &code
	}
	return e
}

// bytes is what running x's extension holds at most: one engine
// session per choice in turn (its KV cache of the whole generation), the
// lens's row per layer, and the internals kept for the response.
func (p *apiProbe) bytes(x *apiExchange) int64 {
	m := p.lm.Model
	b := sessionBytes(m, len(x.gen.IDs)+x.gen.Max) + 4*p.st.Values(p.shape(x))
	if p.st.LensTop > 0 {
		b += int64(m.Config.Layers) * int64(m.Config.Vocab) * 4
	}
	return b
}

// shape is what x's extension is checked against.
func (p *apiProbe) shape(x *apiExchange) api.Shape {
	c := p.lm.Model.Config
	return api.Shape{Layers: c.Layers, Heads: c.Heads, Prompt: len(x.gen.IDs), MaxTokens: x.gen.Max, N: x.req.N}
}

// probeInSlot runs f, the answer to x, a request with the extension, in
// one of the server's work slots (its passes run outside the API's
// batch, with hooks and interventions of their own) and holding its
// memory in the budget the Explorer's runs share; it is stopped at the
// work timeout like any other engine work.
func (s *Server) probeInSlot(c echo.Context, x *apiExchange, f func() error) error {
	release, err := s.holdMemory(x.probe.bytes(x), "this request's internals", "its engine session's KV cache, the lens's rows and the internals returned", "ask for fewer tokens (max_tokens, n)")
	var busy *echo.HTTPError
	switch {
	case errors.As(err, &busy):
		return apiError(c, apiBusy())
	case err != nil:
		return apiError(c, probeInvalid("stepthrough", err, "stepthrough_too_large"))
	}
	defer release()
	err = s.inSlot(c.Request().Context(), clientOf(c), func(ctx context.Context) error {
		c.SetRequest(c.Request().WithContext(ctx))
		return f()
	})
	if errors.Is(err, errBusy) {
		return apiError(c, apiBusy())
	}
	return err
}

// apiBusy answers a request with the extension when the server's work
// slots or memory budget are taken.
func apiBusy() *api.Error {
	return &api.Error{Status: http.StatusServiceUnavailable, Message: "The server is busy with other engine work: retry shortly", Type: "server_error", Code: ptr("server_busy")}
}

// probedChoices generates x's choices one after another on sessions of
// their own, recording each token's internals, with the same callbacks as
// choices.
func (s *Server) probedChoices(ctx context.Context, x *apiExchange, emit func(i int, d api.Delta) error, done func(*api.Choice) error) ([]*api.Choice, error) {
	choices := make([]*api.Choice, x.req.N)
	for i := range choices {
		c, err := s.probedChoice(ctx, x, i, emit)
		if err != nil {
			return nil, err
		}
		if err := done(c); err != nil {
			return nil, err
		}
		choices[i] = c
	}
	return choices, nil
}

// probedChoice generates choice i of x.
func (s *Server) probedChoice(ctx context.Context, x *apiExchange, i int, emit func(i int, d api.Delta) error) (*api.Choice, error) {
	smp, err := sample.New(x.gen.Sampling(i))
	if err != nil {
		return nil, err
	}
	r := x.gen.Reply(i)
	n := 0
	g := engine.Gen{Limits: engine.Limits{MaxTokens: x.gen.Max, IgnoreEOS: x.req.IgnoreEOS}, Sampler: smp}
	finish, err := session.Generate(ctx, x.probe.lm, x.probe.iv, x.gen.IDs, x.probe.probe, g, func(id int32, logits []float32, pass *session.Pass) error {
		if x.probe.st.PerToken() {
			r.Probe(x.probe.internals(i, n, id, pass, x.gen.Tok.Display))
		}
		n++
		d, complete := r.Token(id, logits)
		if !d.Empty() {
			if err := emit(i, d); err != nil {
				return err
			}
		}
		if complete {
			return engine.ErrStop
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if finish == engine.FinishCaller {
		finish = serve.FinishStop // the reply ended it, as the scheduler's OnToken does
	}
	d, c := r.End(finish)
	c.Seed = smp.Seed()
	if !d.Empty() {
		if err := emit(i, d); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// internals writes token j of choice i and its pass for the response.
func (p *apiProbe) internals(i, j int, id int32, pass *session.Pass, display func(int32) string) api.TokenInternals {
	t := api.TokenInternals{Index: j, ID: id, Text: display(id), Position: pass.Position, ResidualNorms: pass.Norms}
	if p.st.TraceURL && i == 0 { // the request's page follows its first choice
		t.TraceURL = fmt.Sprintf("%s#token-%d", p.base, j)
	}
	for l, L := range pass.Lens {
		ll := api.LensLayer{Layer: l, FinalRank: L.FinalRank, Top: make([]api.LensToken, len(L.Top))}
		for k, c := range L.Top {
			ll.Top[k] = api.LensToken{ID: c.ID, Text: display(c.ID), P: c.P}
		}
		t.LogitLens = append(t.LogitLens, ll)
	}
	for k, w := range pass.Attention {
		t.Attention = append(t.Attention, api.HeadWeights{Layer: p.st.Layers[k/len(p.st.Heads)], Head: p.st.Heads[k%len(p.st.Heads)], Weights: w})
	}
	return t
}

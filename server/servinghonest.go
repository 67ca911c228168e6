package server

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"stepthrough/engine/serve"
	"stepthrough/present"
	"stepthrough/views"
)

// honestLoad is the load "Measuring honestly" runs: small enough for a
// page, arriving at random so queueing shows.
var honestLoad = serve.Load{Users: 16, Rate: 50, PromptTokens: 32, MinTokens: 8, MaxTokens: 48, Seed: 1, IgnoreEOS: true}

// honestPage runs the load under continuous and static batching, twice
// each, alternating, and shows loadgen's output with the checklist.
func (s *Server) honestPage(c echo.Context) error {
	model := c.QueryParam("model")
	if model == "" {
		model = s.reg.Default()
	}
	p := present.HonestPage(model, honestLoad)
	if !slices.Contains(s.reg.Names(), model) {
		p.Error = fmt.Sprintf("model %q: not one of the models here", truncate(model, 60))
		return renderPageStatus(c, http.StatusBadRequest, views.HonestPageView(p))
	}
	b, err := s.runHonest(c, model)
	if err != nil {
		p.Error = err.Error()
		return renderPageStatus(c, http.StatusServiceUnavailable, views.HonestPageView(p))
	}
	var out bytes.Buffer
	b.WriteTable(&out)
	p.Output = out.String()
	return renderPage(c, views.HonestPageView(p))
}

func (s *Server) runHonest(c echo.Context, model string) (serve.Benchmark, error) {
	var b serve.Benchmark
	if !s.serving.acquire() {
		return b, errors.New("a load is already running on this server (the serving page's): try again when it ends")
	}
	defer s.serving.finished()
	lm, err := s.reg.Engine(model, "auto")
	if err != nil {
		return b, err
	}
	settings := []serve.Options{{Policy: serve.Continuous, MaxSeqs: 8, ChunkedPrefill: true}, {Policy: serve.Static, MaxSeqs: 8, ChunkedPrefill: true}}
	return serve.Measure(c.Request().Context(), model, lm, settings, honestLoad, 2)
}

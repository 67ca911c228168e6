package server

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"stepthrough/engine/serve"
	"stepthrough/views"
)

// honestLoad is the load "Measuring honestly" runs: small enough for a
// page, arriving at random so queueing shows.
var honestLoad = serve.Load{Users: 16, Rate: 50, PromptTokens: 32, MinTokens: 8, MaxTokens: 48, Seed: 1, IgnoreEOS: true}

// honestChecklist is what a benchmark must report, and where loadgen's
// output reports it.
var honestChecklist = []views.HonestItem{
	{What: "The hardware and the backend", Where: `the "hardware:" and "backend:" lines`, Why: "The same model is several times faster or slower on another machine; a number without its machine says nothing."},
	{What: "The model and its precision", Where: `the "model:" line (the file says its weights' type)`, Why: "Fewer bits read less memory per token: a quantized model is a different benchmark."},
	{What: "The load", Where: `the "load:" line: users, how they arrive, prompt and reply lengths, temperature, seed`, Why: "Throughput and latency depend on how many users come, when, and how long their prompts and replies are; the seed makes the load repeatable."},
	{What: "Both phases", Where: "TTFT (prompt read, plus any wait) and TPOT (each token after the first), and the time spent in prompt steps and in decode-only steps", Why: "Prefill is bound by arithmetic and grows with the prompt; decode is bound by reading memory. One number for both hides which one a change helped."},
	{What: "Percentiles, not only a mean", Where: "p50 and p95 of TTFT and TPOT, p95 of the time queued", Why: "Users feel the slow requests: a mean hides the tail that p95 shows."},
	{What: "Throughput and latency together", Where: `"tokens/s (generated)" beside each user's TTFT and TPOT`, Why: "Batching raises the server's tokens per second while each user may wait longer per token; either number alone misleads."},
	{What: "The same load for every setting compared, side by side", Where: "one load line, one row per setting, run in one session", Why: "The machine is shared and its speed drifts: compare settings run in the same session on the same load, and report the ratio."},
	{What: "A warm-up", Where: "loadgen runs untimed passes first", Why: "The first passes after loading pay for the weights coming into memory and cold caches; they are not the server's steady speed."},
	{What: "The spread", Where: "each setting's two rows", Why: "Two runs of the same setting differ; a difference between settings smaller than that spread is not a result."},
	{What: "Memory", Where: `"KV held at peak" and "contiguous at full context"`, Why: "How many users fit is set by the KV cache as much as by speed."},
}

// honestPage runs the load under continuous and static batching, twice
// each, alternating, and shows loadgen's output with the checklist.
func (s *Server) honestPage(c echo.Context) error {
	model := c.QueryParam("model")
	if model == "" {
		model = s.reg.Default()
	}
	p := views.HonestPage{Model: model, Checklist: honestChecklist,
		Command: fmt.Sprintf("stepthrough loadgen --model %s --users %d --rate %g --prompt-tokens %d --min-tokens %d --max-tokens %d --max-seqs 8 --policy continuous,static --rounds 2",
			model, honestLoad.Users, honestLoad.Rate, honestLoad.PromptTokens, honestLoad.MinTokens, honestLoad.MaxTokens)}
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

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"stepthrough/engine/sample"
	"stepthrough/engine/trace"
	"stepthrough/spec"
	"stepthrough/views"
)

// requestRoutes adds "Watch this request": the last API requests, each
// followed through the engine.
func (s *Server) requestRoutes(e *echo.Echo) {
	e.GET("/requests", s.requestList)
	e.GET("/requests/:id", s.requestDetail)
	e.POST("/api-key", s.apiKeySubmit)
}

func (s *Server) requestList(c echo.Context) error {
	l := views.RequestList{}
	if !s.keyOK(c) {
		return s.askKey(c, "")
	}
	for _, w := range s.watched.list() {
		summary := w.Prompt
		if len(summary) > 80 {
			summary = summary[:80] + "…"
		}
		l.Items = append(l.Items, views.RequestItem{ID: w.ID, URL: "/requests/" + w.ID, Endpoint: endpoint(w.Chat), Model: w.Model,
			Time: w.Time.Format("15:04:05"), Summary: summary, Tokens: w.Usage.TotalTokens})
	}
	return renderPage(c, views.RequestListPage(l))
}

func endpoint(chat bool) string {
	if chat {
		return "POST /v1/chat/completions"
	}
	return "POST /v1/completions"
}

func (s *Server) requestDetail(c echo.Context) error {
	if !s.keyOK(c) {
		return s.askKey(c, "")
	}
	w := s.watched.get(c.Param("id"))
	if w == nil {
		return c.String(http.StatusNotFound, "no such request: the server keeps the last "+strconv.Itoa(s.cfg.API.Keep))
	}
	p := views.RequestPage{ID: w.ID, Endpoint: endpoint(w.Chat), Model: w.Model, Time: w.Time.Format("2006-01-02 15:04:05"), Streamed: w.Streamed,
		Request: indent(w.Raw), Prompt: w.Prompt, Template: w.Template, PromptTokens: w.PromptTokens,
		Usage: [3]int{w.Usage.PromptTokens, w.Usage.CompletionTokens, w.Usage.TotalTokens}, Finish: w.Finish, Response: w.Response,
		Seed: strconv.FormatUint(w.Seed, 10), Probed: w.Probed}
	if d := w.Usage.PromptTokensDetails; d != nil {
		p.Cached = d.CachedTokens
	}
	if !w.Streamed {
		p.Response = indent(w.Response)
	}
	run, err := s.replay(w)
	if err != nil {
		p.ExplorerNote = "The Explorer cannot replay this request: " + err.Error()
	} else {
		p.Explorer = "/?" + run.Query().Encode()
	}
	m, err := s.reg.Get(w.Model)
	if err != nil {
		return c.String(http.StatusNotFound, err.Error())
	}
	logprobs := make([]float64, 0, len(w.Generated))
	for _, tk := range w.Tokens {
		logprobs = append(logprobs, tk.Logprob)
	}
	if len(logprobs) == 0 && len(w.Generated) > 0 { // the request did not ask for them: the engine computes them now
		if err := s.withWork(c, func(ctx context.Context) (err error) {
			logprobs, err = s.rescore(ctx, w)
			return err
		}); err != nil {
			p.LogprobsNote = "The log-probabilities could not be computed: " + err.Error()
		} else {
			p.LogprobsNote = "The request did not ask for logprobs: the engine computed these when this page was opened, reading the prompt and the generated tokens again (the same numbers up to float rounding)."
		}
	}
	p.Logprobs = len(logprobs) > 0
	for i, id := range w.Generated {
		t := views.RequestToken{Step: i, ID: id, Text: views.PieceLabel(m.Tokenizer.Display(id)), End: m.Tokenizer.IsEOG(id), Pass: -1}
		if i < len(w.Steps) {
			t.Pass, t.Mates = w.Steps[i].Step, shortIDs(w.Steps[i].Mates)
		}
		if i < len(logprobs) && !t.End {
			t.Logprob, t.P = logprobs[i], math.Exp(logprobs[i])
		}
		if p.Explorer != "" {
			r := run
			r.View = spec.View{Token: i, StageName: string(trace.StageSoftmax), Layer: -1, Temperature: 1}
			t.Softmax = "/?" + r.Query().Encode()
		}
		p.Tokens = append(p.Tokens, t)
	}
	return renderPage(c, views.RequestDetailPage(p))
}

// replay is the Explorer run that recomputes a request's first choice:
// the rendered prompt with its markup parsed, the same settings and seed,
// as many tokens.
func (s *Server) replay(w *Watched) (spec.Run, error) {
	r := spec.Default(w.Model)
	r.Prompt, r.Special, r.Sampler, r.MaxTokens = w.Prompt, true, w.Sampler, max(1, len(w.Generated))
	r.Sampler.Seed, r.Sampler.SeedSet = w.Seed, true
	r.Backend = "auto"
	r.Ablate, r.Steer, r.MeanOver = w.Ablate, w.Steer, w.MeanOver
	if err := r.Validate(); err != nil {
		return r, err
	}
	return r, nil
}

// indent pretty-prints JSON (anything else as it is).
func indent(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(strings.TrimSpace(s)), "", "  ") != nil {
		return s
	}
	return b.String()
}

// shortIDs shortens request ids to their first hex digits: enough to tell
// batch-mates apart, too few to open another client's request.
func shortIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		pre, hex, ok := strings.Cut(id, "-")
		if !ok || len(hex) <= 6 {
			out[i] = id
			continue
		}
		out[i] = pre + "-" + hex[:6] + "…"
	}
	return out
}

// rescoreChunk is how many positions one pass of rescore reads (its logits
// are chunk × vocabulary floats).
const rescoreChunk = 64

// rescore is the log-probability of each generated token of w's first
// choice under the model's raw logits (temperature 1): the prompt and the
// tokens before it read again, a chunk at a time.
func (s *Server) rescore(ctx context.Context, w *Watched) ([]float64, error) {
	lm, err := s.reg.Engine(w.Model, "auto")
	if err != nil {
		return nil, err
	}
	if len(w.PromptIDs) == 0 {
		return nil, errors.New("the prompt's tokens were not kept")
	}
	es, err := lm.NewSession(len(w.PromptIDs) + len(w.Generated))
	if err != nil {
		return nil, err
	}
	defer es.Close()
	last, err := es.Eval(ctx, w.PromptIDs)
	if err != nil {
		return nil, err
	}
	vocab := len(last)
	out := make([]float64, 0, len(w.Generated))
	out = append(out, logprobOf(last, w.Generated[0]))
	for from := 0; from+1 < len(w.Generated); from += rescoreChunk {
		chunk := w.Generated[from:min(from+rescoreChunk, len(w.Generated)-1)]
		all, err := es.EvalAll(ctx, chunk)
		if err != nil {
			return nil, err
		}
		for j := range chunk {
			out = append(out, logprobOf(all[j*vocab:(j+1)*vocab], w.Generated[from+j+1]))
		}
	}
	return out, nil
}

// logprobOf is id's log-probability under logits.
func logprobOf(logits []float32, id int32) float64 {
	return float64(logits[id]) - sample.LogSumExp(logits)
}

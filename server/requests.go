package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"stepthrough/engine/sample"
	"stepthrough/engine/trace"
	"stepthrough/present"
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
	if !s.keyOK(c) {
		return s.askKey(c, "")
	}
	var rs []present.Request
	for _, w := range s.watched.list() {
		rs = append(rs, w.request())
	}
	return renderPage(c, views.RequestListPage(present.RequestList(rs)))
}

// request is what the request pages show of w.
func (w *Watched) request() present.Request {
	r := present.Request{ID: w.ID, Model: w.Model, Time: w.Time, Chat: w.Chat, Streamed: w.Streamed, Probed: w.Probed, Raw: w.Raw,
		Prompt: w.Prompt, Template: w.Template, PromptTokens: w.PromptTokens, Usage: [3]int{w.Usage.PromptTokens, w.Usage.CompletionTokens, w.Usage.TotalTokens},
		Finish: w.Finish, Response: w.Response, Seed: w.Seed}
	if d := w.Usage.PromptTokensDetails; d != nil {
		r.Cached = d.CachedTokens
	}
	return r
}

func (s *Server) requestDetail(c echo.Context) error {
	if !s.keyOK(c) {
		return s.askKey(c, "")
	}
	w := s.watched.get(c.Param("id"))
	if w == nil {
		return c.String(http.StatusNotFound, "no such request: the server keeps the last "+strconv.Itoa(s.cfg.API.Keep))
	}
	p := present.RequestPage(w.request())
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
	steps := make([]present.RequestStep, len(w.Steps))
	for i, st := range w.Steps {
		steps[i] = present.RequestStep{Pass: st.Step, Mates: st.Mates}
	}
	var softmax func(int) string
	if p.Explorer != "" {
		softmax = func(i int) string {
			r := run
			r.View = spec.View{Token: i, StageName: string(trace.StageSoftmax), Layer: -1, Temperature: 1}
			return "/?" + r.Query().Encode()
		}
	}
	present.RequestTokens(&p, m.Tokenizer, w.Generated, steps, logprobs, softmax)
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
	if err := r.SetInterventions(w.Ablate, w.Steer, w.MeanOver); err != nil {
		return r, err
	}
	if err := r.Validate(); err != nil {
		return r, err
	}
	return r, nil
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

package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"stepthrough/api"
	"stepthrough/engine"
	"stepthrough/engine/serve"
	"stepthrough/registry"
	"stepthrough/session"
	"stepthrough/wsconn"
)

// APIConfig configures the OpenAI-compatible API (/v1/...).
type APIConfig struct {
	Key string // empty: no key is asked for
	// MaxConcurrent is the most sequences (requests' choices) generating
	// at once in a model's batch (default 8); MaxQueued more requests may
	// wait for a place (default 64); beyond both, 429.
	MaxConcurrent int
	MaxQueued     int
	// KVBytes is the KV cache a model's batch holds, shared by its
	// sequences and the prefix cache (default 512 MiB; at least one whole
	// context).
	KVBytes   int64
	MaxBody   int64 // request body bytes (default 1 MiB)
	Limits    api.Limits
	Keep      int // requests kept for "Watch this request" (default 32)
	KeepBytes int // the bytes those may hold together (default 16 MiB)
	// BodyWait is how long a client may take to send a request's body
	// (default 10 s); no generation slot is held meanwhile.
	BodyWait time.Duration
}

func (c *APIConfig) defaults() {
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 8
	}
	if c.MaxQueued <= 0 {
		c.MaxQueued = 64
	}
	if c.KVBytes <= 0 {
		c.KVBytes = 512 << 20
	}
	if c.MaxBody <= 0 {
		c.MaxBody = 1 << 20
	}
	if c.Limits == (api.Limits{}) {
		c.Limits = api.DefaultLimits
	}
	if c.Keep <= 0 {
		c.Keep = 32
	}
	if c.KeepBytes <= 0 {
		c.KeepBytes = 16 << 20
	}
	if c.BodyWait <= 0 {
		c.BodyWait = 10 * time.Second
	}
}

// apiRoutes adds the API's routes.
func (s *Server) apiRoutes(e *echo.Echo) {
	s.cfg.API.defaults()
	s.apiSlots = make(chan struct{}, s.cfg.API.MaxConcurrent+s.cfg.API.MaxQueued)
	g := e.Group("/v1", s.apiAuth)
	g.GET("/models", s.apiModels)
	g.POST("/chat/completions", s.apiGenerate(true))
	g.POST("/completions", s.apiGenerate(false))
	g.Any("/*", func(c echo.Context) error {
		return apiError(c, &api.Error{Status: http.StatusNotFound, Message: "No such endpoint: " + c.Request().Method + " " + c.Request().URL.Path, Type: "invalid_request_error"})
	})
}

func apiError(c echo.Context, e *api.Error) error {
	return c.JSONBlob(e.Status, e.JSON())
}

// apiAuth checks the API key when the server has one, and refuses what
// only another website's page would send (even without a key): a browser
// lets any page POST text/plain across sites without asking, so a body
// must be declared JSON, and an Origin, when sent, must be this host's.
func (s *Server) apiAuth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if !wsconn.SameOrigin(r) {
			return apiError(c, &api.Error{Status: http.StatusForbidden, Message: "Requests from another website's pages are refused (the Origin header names another host)", Type: "invalid_request_error"})
		}
		if r.Method == http.MethodPost {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				return apiError(c, &api.Error{Status: http.StatusUnsupportedMediaType, Message: "Send the body as JSON, with Content-Type: application/json", Type: "invalid_request_error"})
			}
		}
		if key := s.cfg.API.Key; key != "" {
			got, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(key)) != 1 {
				return apiError(c, api.Unauthorized())
			}
		}
		return next(c)
	}
}

func (s *Server) apiModels(c echo.Context) error {
	s.offerCached(c)
	l := api.ModelList{Object: "list", Data: []api.Model{}}
	for _, n := range s.reg.Names() {
		l.Data = append(l.Data, api.Model{ID: n, Object: "model", Created: s.started.Unix(), OwnedBy: "stepthrough"})
	}
	return c.JSON(http.StatusOK, l)
}

// apiGenerate serves /v1/chat/completions (chat) and /v1/completions.
// The body is read in full, within apiBodyWait, before the request takes
// a place (generating or queued): a client trickling its body holds none.
func (s *Server) apiGenerate(chat bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		body, e := s.apiBody(c)
		if e != nil {
			return apiError(c, e)
		}
		decode := api.DecodeCompletion
		if chat {
			decode = api.DecodeChat
		}
		req, e := decode(c.Request().Context(), body, s.cfg.API.Limits)
		if e != nil {
			return apiError(c, e)
		}
		select {
		case s.apiSlots <- struct{}{}:
			defer func() { <-s.apiSlots }()
		default:
			return apiError(c, api.TooMany(cap(s.apiSlots)))
		}
		x, e := s.prepare(c.Request().Context(), req, s.cacheScope(c, req.CacheSalt))
		if e != nil {
			return apiError(c, e)
		}
		if e := s.setupProbe(x, c.Scheme()+"://"+c.Request().Host); e != nil {
			return apiError(c, e)
		}
		x.watch.Raw = string(body[:min(len(body), maxWatchedBody)])
		answer := func() error {
			if req.Stream {
				return s.stream(c, x)
			}
			return s.respond(c, x)
		}
		if x.probe != nil {
			return s.probeInSlot(c, x, answer)
		}
		return answer()
	}
}

// apiBody reads the request's body within BodyWait and MaxBody bytes. A
// body that fails ends the connection after the answer (the server would
// otherwise wait, with no deadline, for the rest of it).
func (s *Server) apiBody(c echo.Context) ([]byte, *api.Error) {
	rc := http.NewResponseController(c.Response().Writer)
	rc.SetReadDeadline(time.Now().Add(s.cfg.API.BodyWait)) // unsupported (a recorder in tests): the server's read timeout holds
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, s.cfg.API.MaxBody))
	if err == nil {
		rc.SetReadDeadline(time.Time{})
		return body, nil
	}
	c.Response().Header().Set("Connection", "close")
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, api.TooLarge(s.cfg.API.MaxBody)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, &api.Error{Status: http.StatusRequestTimeout, Message: fmt.Sprintf("The request body did not arrive within %s", s.cfg.API.BodyWait), Type: "invalid_request_error"}
	}
	return nil, &api.Error{Status: http.StatusBadRequest, Message: "reading the body: " + err.Error(), Type: "invalid_request_error"}
}

// maxWatchedBody caps the request body a watched request keeps.
const maxWatchedBody = 64 << 10

// apiExchange is one request being served: its prompt's tokens and the
// batch its choices join.
type apiExchange struct {
	req     *api.Request
	model   string
	lm      *engine.Loaded
	gen     *api.Generator
	batch   *serve.Scheduler
	id      string
	created int64
	watch   *Watched
	steps   []tokenStep // choice 0's tokens' steps (written by the scheduler's goroutine until choice 0 ends)
	cached  int         // prompt tokens read from the prefix cache
	scope   string      // whose prefix-cache blocks it may read (cacheScope)
	times   serve.Times // choice 0's, when it ended
	probe   *apiProbe   // the "stepthrough" extension (nil: absent)
}

// prepare resolves the model, renders and tokenizes the prompt, and fits
// it to the context; the request will share prefix-cache blocks only
// within scope.
func (s *Server) prepare(ctx context.Context, req *api.Request, scope string) (*apiExchange, *api.Error) {
	name := req.Model
	if name == "" {
		name = s.reg.Default()
	}
	name, err := s.reg.Resolve(name) // NAME@TYPE too: that model converted in memory
	if err != nil {
		return nil, api.NotFoundModel(req.Model, s.reg.Names())
	}
	lm, err := s.reg.Engine(name, "auto")
	if err != nil {
		return nil, s.modelError(name, err)
	}
	batch, err := s.batch(name, lm)
	if err != nil {
		return nil, api.Internal(err)
	}
	tk := lm.Model.Tokenizer
	p, e := api.Build(req, tk)
	if e != nil {
		return nil, e
	}
	var ids []int32
	for _, t := range p.Tokens(tk) {
		ids = append(ids, t.ID)
	}
	if len(ids) == 0 {
		return nil, &api.Error{Status: http.StatusBadRequest, Message: "The prompt has no tokens", Type: "invalid_request_error", Param: ptr("prompt")}
	}
	capacity := batch.Context()
	max := req.MaxTokens
	if max == 0 {
		max = min(s.cfg.API.Limits.MaxTokens, capacity-len(ids))
	}
	if max < 1 || len(ids)+max > capacity {
		return nil, api.ContextExceeded(len(ids), max, capacity)
	}
	x := &apiExchange{req: req, model: name, lm: lm, batch: batch, created: time.Now().Unix(), scope: scope,
		gen: &api.Generator{Tok: tk, Req: req, Prompt: p, IDs: ids, Max: max}}
	x.id = s.watched.next(req.Chat)
	x.watch = &Watched{ID: x.id, Time: time.Now(), Chat: req.Chat, Model: name, Prompt: p.Text, Template: p.Template, PromptTokens: len(ids), PromptIDs: ids, Sampler: req.Sampler}
	return x, nil
}

func ptr(s string) *string { return &s }

// modelError answers a model that could not be prepared: an offered model
// whose file is broken is unavailable (503, logged with its path), any
// other failure the engine's.
func (s *Server) modelError(name string, err error) *api.Error {
	var le *registry.LoadError
	if !errors.As(err, &le) {
		return api.Internal(err)
	}
	s.log.Warn("model failed to load", "model", le.Name, "path", le.Path, "err", le.Err)
	return api.ModelUnavailable(name, err)
}

// engineError answers a failure of the engine while it generated for
// model name: a pass whose logits were not finite is the model's, named
// (503); what the request's interventions cannot do (a mean ablation's
// text past the context) the request's (400); anything else the
// server's.
func engineError(name string, err error) *api.Error {
	var se *session.Error
	switch {
	case errors.Is(err, engine.ErrNonFinite):
		return api.NonFinite(name, err)
	case errors.As(err, &se):
		return probeInvalid("stepthrough", err, "")
	}
	return api.Internal(err)
}

// respond answers a request that does not stream.
func (s *Server) respond(c echo.Context, x *apiExchange) error {
	b, _, err := s.complete(c.Request().Context(), x)
	if err != nil {
		return apiError(c, engineError(x.model, err))
	}
	return c.JSONBlob(http.StatusOK, b)
}

// complete generates every choice of x and returns the response body (and
// its chat form), keeping the request for watching.
func (s *Server) complete(ctx context.Context, x *apiExchange) ([]byte, *api.ChatCompletion, error) {
	choices, err := s.choices(ctx, x, func(int, api.Delta) error { return nil }, func(*api.Choice) error { return nil })
	if err != nil {
		return nil, nil, err
	}
	u := api.NewUsage(len(x.gen.IDs), x.cached, choices)
	var v any
	var cc *api.ChatCompletion
	if x.req.Chat {
		r := api.ChatResponse(x.id, x.model, x.created, choices, u, x.req.Logprobs)
		v, cc = r, &r
	} else {
		v = api.TextResponse(x.id, x.model, x.created, choices, u, x.req.Logprobs)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	s.watched.add(x.watch.finish(choices, u, string(b), x.steps), s.cfg.API.Keep, s.cfg.API.KeepBytes)
	return b, cc, nil
}

// inProcess is a chat request the server ran for its own pages: the
// response, and choice 0's measured times in the batch.
type inProcess struct {
	cc    *api.ChatCompletion
	times serve.Times
}

// chatInProcess runs a chat request body the way /v1/chat/completions does
// (recorded for watching), for the server's own pages, in the page
// visitor's prefix-cache scope; the caller holds a work slot.
func (s *Server) chatInProcess(ctx context.Context, scope string, body []byte) (inProcess, *api.Error) {
	req, e := api.DecodeChat(ctx, body, s.cfg.API.Limits)
	if e != nil {
		return inProcess{}, e
	}
	x, e := s.prepare(ctx, req, scope)
	if e != nil {
		return inProcess{}, e
	}
	if e := s.setupProbe(x, ""); e != nil { // the caller holds a work slot
		return inProcess{}, e
	}
	x.watch.Raw = string(body)
	_, cc, err := s.complete(ctx, x)
	if err != nil {
		return inProcess{}, engineError(x.model, err)
	}
	return inProcess{cc: cc, times: x.times}, nil
}

// stream answers with server-sent events, a chunk per delta, then
// data: [DONE].
func (s *Server) stream(c echo.Context, x *apiExchange) error {
	x.watch.Streamed = true
	w := c.Response()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	var transcript boundedText
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		line := "data: " + string(b) + "\n\n"
		transcript.WriteString(line)
		if _, err := io.WriteString(w, line); err != nil {
			return err
		}
		w.Flush()
		return nil
	}
	id, model, created, req := x.id, x.model, x.created, x.req
	offsets := make([]int, req.N)
	started := make([]bool, req.N) // a chat choice's first chunk carries its role
	role := func(i int) error {
		if !req.Chat || started[i] {
			return nil
		}
		started[i] = true
		return send(api.ChatRoleChunk(id, model, created, i))
	}
	emit := func(i int, d api.Delta) error {
		if err := role(i); err != nil {
			return err
		}
		if req.Chat {
			return send(api.ChatChunk(id, model, created, i, d, req.Logprobs))
		}
		ch := api.TextChunk(id, model, created, i, d, "", req.Logprobs, offsets[i])
		offsets[i] += len(d.Content)
		return send(ch)
	}
	done := func(ch *api.Choice) error {
		if err := role(ch.Index); err != nil {
			return err
		}
		if req.Chat {
			return send(api.ChatEndChunk(id, model, created, ch))
		}
		return send(api.TextChunk(id, model, created, ch.Index, api.Delta{}, ch.Finish, false, offsets[ch.Index]))
	}
	choices, err := s.choices(c.Request().Context(), x, emit, done)
	if err != nil {
		// the status is sent: the error goes in the stream, as OpenAI does
		send(struct {
			Error *api.Error `json:"error"`
		}{engineError(x.model, err)})
		return nil
	}
	u := api.NewUsage(len(x.gen.IDs), x.cached, choices)
	if req.IncludeUsage {
		if req.Chat {
			send(api.UsageChunk(id, model, created, u))
		} else {
			send(api.TextCompletion{ID: id, Object: "text_completion", Created: created, Model: model, Choices: []api.TextChoice{}, Usage: &u})
		}
	}
	// kept before the last line goes out: a client that reads [DONE] and
	// then asks for the request finds it
	const end = "data: [DONE]\n\n"
	transcript.WriteString(end)
	s.watched.add(x.watch.finish(choices, u, transcript.String(), x.steps), s.cfg.API.Keep, s.cfg.API.KeepBytes)
	io.WriteString(w, end)
	w.Flush()
	return nil
}

// apiPath reports an API request: the site's small body limit skips it
// (the API reads its own, and answers in its own error format).
func apiPath(c echo.Context) bool { return strings.HasPrefix(c.Request().URL.Path, "/v1/") }

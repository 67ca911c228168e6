package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"stepthrough/engine/serve"
	"stepthrough/present"
	"stepthrough/views"
	"stepthrough/wsconn"
)

// The serving floor (/serving): simulated users served on a real model
// through the scheduler (engine/serve), one load at a time per server,
// watched live over server-sent events and measured when done.
//
//	GET  /serving                    the form and the recent runs
//	POST /serving/runs               start a load → /serving/runs/ID
//	GET  /serving/runs/ID            the run: live, then measured
//	GET  /serving/runs/ID/events     its steps and tokens (text/event-stream)
//	GET  /serving/runs/ID/ws         the same over a WebSocket (?from=N resumes)
//	GET  /serving/sweep?model=NAME   prefill time against prompt length
//	GET  /serving/benchmarking       measuring honestly: a real loadgen run and what to report

// servingMaxRuns is how many finished runs the page keeps.
const servingMaxRuns = 8

// servingTimeout bounds one run (every setting of it).
const servingTimeout = 3 * time.Minute

// servingMaxEvents bounds one run's event log.
const servingMaxEvents = 200_000

type servingRuns struct {
	mu     sync.Mutex
	runs   map[string]*servingRun
	order  []string
	active bool
}

// servingRun is one load under one or two settings.
type servingRun struct {
	id       string
	form     views.ServingForm
	model    string
	load     serve.Load
	settings []serve.Options
	names    []string
	ctxLen   int
	kvBytes  int

	mu      sync.Mutex
	events  [][]byte      // SSE data lines, in order
	changed chan struct{} // closed when events or done change
	done    bool
	err     string
	reports []*serve.Report   // each setting's first run (watched live)
	repeats [][]*serve.Report // each setting's runs, the first included
	round   string            // while measuring again: which round
	texts   [][]string        // per setting, per user
	finish  [][]string
}

func (r *servingRun) publish(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.events) < servingMaxEvents {
		r.events = append(r.events, b)
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *servingRun) end(errText string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done, r.err = true, errText
	close(r.changed)
	r.changed = make(chan struct{})
}

// since returns the events from i on, whether the run is done, and a
// channel closed at the next change.
func (r *servingRun) since(i int) ([][]byte, bool, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[min(i, len(r.events)):], r.done, r.changed
}

func (s *Server) servingRoutes(e *echo.Echo) {
	e.GET("/serving", s.servingPage)
	e.POST("/serving/runs", s.startServing)
	e.GET("/serving/runs/:id", s.servingRunPage)
	e.GET("/serving/runs/:id/events", s.servingEvents)
	e.GET("/serving/runs/:id/ws", s.servingWS)
	e.GET("/serving/sweep", s.servingSweepPage)
	e.GET("/serving/benchmarking", s.honestPage)
}

func (s *Server) servingBase(form views.ServingForm) views.ServingPage {
	s.serving.mu.Lock()
	defer s.serving.mu.Unlock()
	var runs []present.ServingState
	for i := len(s.serving.order) - 1; i >= 0; i-- {
		runs = append(runs, s.serving.runs[s.serving.order[i]].state())
	}
	return present.ServingPage(s.reg.Names(), form, runs)
}

// state is the run as it stands.
func (r *servingRun) state() present.ServingState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return present.ServingState{ID: r.id, Model: r.model, Load: r.load, Settings: r.settings, Names: r.names, CtxLen: r.ctxLen, KVBytes: r.kvBytes,
		Done: r.done, Err: r.err, Reports: r.reports, Repeats: r.repeats, Round: r.round, Texts: r.texts, Finish: r.finish}
}

func (s *Server) servingPage(c echo.Context) error {
	return renderPage(c, views.ServingPageView(s.servingBase(present.DefaultServingForm(s.reg.Default()))))
}

// parseServing reads the form into a load and its settings.
func (s *Server) parseServing(form views.ServingForm) (serve.Load, []serve.Options, []string, error) {
	var ld serve.Load
	if !slices.Contains(s.reg.Names(), form.Model) {
		return ld, nil, nil, fmt.Errorf("model %q: not one of %s", truncate(form.Model, 60), strings.Join(s.reg.Names(), ", "))
	}
	ints := []struct {
		name   string
		text   string
		dst    *int
		lo, hi int
	}{{"users", form.Users, &ld.Users, 1, 64}, {"prompt tokens", form.PromptTokens, &ld.PromptTokens, 1, 1024}, {"shared system prompt tokens", form.Shared, &ld.SharedPrefix, 0, 1023},
		{"reply tokens from", form.MinTokens, &ld.MinTokens, 1, 512}, {"reply tokens to", form.MaxTokens, &ld.MaxTokens, 1, 512}}
	for _, n := range ints {
		v, err := strconv.Atoi(strings.TrimSpace(n.text))
		if err != nil || v < n.lo || v > n.hi {
			return ld, nil, nil, fmt.Errorf("%s %q: a whole number from %d to %d", n.name, truncate(n.text, 20), n.lo, n.hi)
		}
		*n.dst = v
	}
	seqs, err := strconv.Atoi(strings.TrimSpace(form.MaxSeqs))
	if err != nil || seqs < 1 || seqs > 64 {
		return ld, nil, nil, fmt.Errorf("running at once %q: a whole number from 1 to 64", truncate(form.MaxSeqs, 20))
	}
	if ld.MinTokens > ld.MaxTokens {
		return ld, nil, nil, fmt.Errorf("reply tokens: from %d is more than to %d", ld.MinTokens, ld.MaxTokens)
	}
	for _, f := range []struct {
		name string
		text string
		dst  *float64
		hi   float64
	}{{"arrivals a second", form.Rate, &ld.Rate, 1000}, {"temperature", form.Temperature, &ld.Temperature, 2}} {
		v, err := strconv.ParseFloat(strings.TrimSpace(f.text), 64)
		if err != nil || math.IsNaN(v) || v < 0 || v > f.hi {
			return ld, nil, nil, fmt.Errorf("%s %q: a number from 0 to %g", f.name, truncate(f.text, 20), f.hi)
		}
		*f.dst = v
	}
	ld.Seed, ld.IgnoreEOS, ld.Stop = 1, form.IgnoreEOS == "on", form.Stop
	one, name, err := servingSetting(form.Policy, form.Cache, form.Chunked, seqs, ld)
	if err != nil {
		return ld, nil, nil, err
	}
	settings, names := []serve.Options{one}, []string{name}
	if form.Compare != "" {
		two, name2, err := servingCompare(form.Compare, seqs, ld)
		if err != nil {
			return ld, nil, nil, err
		}
		if two.MaxSeqs != seqs { // the two differ in how many run at once: say so in both names
			name, name2 = name+atOnce(seqs), name2+atOnce(two.MaxSeqs)
			names[0] = name
		}
		if name2 != name {
			settings, names = append(settings, two), append(names, name2)
		}
	}
	return ld, settings, names, ld.Check()
}

// servingCompare reads the second setting, policy,cache,chunked with an
// optional fourth part, how many run at once (else the first setting's).
func servingCompare(v string, seqs int, ld serve.Load) (serve.Options, string, error) {
	parts := strings.Split(v, ",")
	if len(parts) != 3 && len(parts) != 4 {
		return serve.Options{}, "", fmt.Errorf("compare %q: policy,cache,chunked[,running at once]", truncate(v, 40))
	}
	if len(parts) == 4 {
		n, err := strconv.Atoi(parts[3])
		if err != nil || n < 1 || n > 64 {
			return serve.Options{}, "", fmt.Errorf("compare %q: running at once, a whole number from 1 to 64", truncate(v, 40))
		}
		seqs = n
	}
	return servingSetting(parts[0], parts[1], parts[2], seqs, ld)
}

// atOnce names how many requests a setting runs at once.
func atOnce(n int) string {
	if n == 1 {
		return " · one at a time"
	}
	return fmt.Sprintf(" · %d at once", n)
}

func servingSetting(policy, cache, chunked string, seqs int, ld serve.Load) (serve.Options, string, error) {
	o := serve.Options{MaxSeqs: seqs, KVPositions: seqs * (ld.PromptTokens + ld.MaxTokens)}
	switch policy {
	case "continuous", "static":
		o.Policy = serve.Policy(policy)
	default:
		return o, "", fmt.Errorf("batching %q: continuous or static", truncate(policy, 20))
	}
	switch cache {
	case "contiguous":
	case "paged", "prefix":
		o.Paged, o.BlockSize, o.PrefixCache = true, 16, cache == "prefix"
		o.KVPositions = (o.KVPositions + 15) / 16 * 16
	default:
		return o, "", fmt.Errorf("KV cache %q: contiguous, paged or prefix", truncate(cache, 20))
	}
	switch chunked {
	case "on":
		o.ChunkedPrefill = true
	case "off":
	default:
		return o, "", fmt.Errorf("chunked prefill %q: on or off", truncate(chunked, 20))
	}
	name := fmt.Sprintf("%s batching · %s KV", policy, cache)
	if o.PrefixCache {
		name = fmt.Sprintf("%s batching · paged KV with the prefix cache", policy)
	}
	if o.ChunkedPrefill {
		name += " · chunked prefill"
	}
	return o, name, nil
}

func formOf(c echo.Context) views.ServingForm {
	return present.ServingFormOf(func(k string) string { return truncate(c.FormValue(k), 100) }, c.FormValue("stop"))
}

func (s *Server) startServing(c echo.Context) error {
	form := formOf(c)
	fail := func(status int, err error) error {
		p := s.servingBase(form)
		p.Error = err.Error()
		return renderPageStatus(c, status, views.ServingPageView(p))
	}
	if !wsconn.SameOrigin(c.Request()) {
		return fail(http.StatusForbidden, errors.New("a load can only be started from this server's own page"))
	}
	ld, settings, names, err := s.parseServing(form)
	if err != nil {
		return fail(http.StatusBadRequest, err)
	}
	lm, err := s.reg.Engine(form.Model, "auto")
	if err != nil {
		return fail(http.StatusBadRequest, err)
	}
	if need := ld.PromptTokens + ld.MaxTokens; need > lm.Context() {
		return fail(http.StatusBadRequest, fmt.Errorf("%d prompt tokens and %d reply tokens need %d positions; %s holds %d", ld.PromptTokens, ld.MaxTokens, need, form.Model, lm.Context()))
	}
	for _, o := range settings {
		if o.Paged && lm.Backend().Name != "cpu" {
			return fail(http.StatusBadRequest, errors.New("the paged KV cache runs on the CPU backend; this model runs on "+lm.Backend().Name))
		}
	}
	run := &servingRun{id: newRunID(), form: form, model: form.Model, load: ld, settings: settings, names: names, ctxLen: lm.Context(),
		kvBytes: lm.Model.KVBytesPerToken(), changed: make(chan struct{})}
	if err := s.serving.add(run); err != nil {
		return fail(http.StatusTooManyRequests, err)
	}
	go s.runServing(run, lm)
	return c.Redirect(http.StatusSeeOther, "/serving/runs/"+run.id)
}

func newRunID() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// add registers a run, refusing a second one while one is active.
func (sr *servingRuns) add(r *servingRun) error {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if sr.active {
		return errors.New("a load is already running on this server: wait for it (it is in the list below) and try again")
	}
	if sr.runs == nil {
		sr.runs = map[string]*servingRun{}
	}
	sr.active = true
	sr.runs[r.id] = r
	sr.order = append(sr.order, r.id)
	for len(sr.order) > servingMaxRuns {
		delete(sr.runs, sr.order[0])
		sr.order = sr.order[1:]
	}
	return nil
}

// acquire marks a load as running (false: one already is).
func (sr *servingRuns) acquire() bool {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if sr.active {
		return false
	}
	sr.active = true
	return true
}

func (sr *servingRuns) finished() {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.active = false
}

func (sr *servingRuns) get(id string) *servingRun {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return sr.runs[id]
}

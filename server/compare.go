package server

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"stepthrough/engine"
	"stepthrough/engine/compare"
	"stepthrough/engine/model"
	"stepthrough/present"
	"stepthrough/spec"
	"stepthrough/views"
)

// compareCache keeps recent comparisons so stepping through one (every
// step is a URL) does not recompute it. Bounded; evicts the oldest.
type compareCache struct {
	mu    sync.Mutex
	order []string
	m     map[string]*compare.Result
}

const compareCacheSize = 32

func (c *compareCache) get(key string) (*compare.Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[key]
	return r, ok
}

func (c *compareCache) put(key string, r *compare.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*compare.Result{}
	}
	if _, ok := c.m[key]; !ok {
		c.order = append(c.order, key)
	}
	c.m[key] = r
	for len(c.order) > compareCacheSize {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}

// compareQuery is a parsed /compare request.
type compareQuery struct {
	prompt, model, seed string
	n                   int
	lanes               []string
	step                int
	again               bool // measure=again: run afresh, not from the cache
}

func (q compareQuery) values(step int) url.Values {
	v := url.Values{"prompt": {q.prompt}, "model": {q.model}, "n": {strconv.Itoa(q.n)}, "lane": q.lanes}
	if q.seed != "" {
		v.Set("seed", q.seed)
	}
	if step >= 0 {
		v.Set("step", strconv.Itoa(step))
	}
	return v
}

func parseCompareQuery(c echo.Context, def string) (compareQuery, error) {
	qp := c.QueryParams()
	q := compareQuery{prompt: qp.Get("prompt"), model: qp.Get("model"), seed: strings.TrimSpace(qp.Get("seed")), n: 16, again: qp.Get("measure") == "again"}
	if q.model == "" {
		q.model = def
	}
	for _, l := range qp["lane"] {
		if l = strings.TrimSpace(l); l != "" {
			q.lanes = append(q.lanes, l)
		}
	}
	if v := qp.Get("n"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 256 {
			return q, fmt.Errorf("tokens %q: choose 1 to 256", v)
		}
		q.n = n
	}
	if v := qp.Get("step"); v != "" {
		s, err := strconv.Atoi(v)
		if err != nil || s < 0 {
			return q, fmt.Errorf("step %q: a whole number from 0", v)
		}
		q.step = s
	}
	if err := spec.CheckPrompt(q.prompt); err != nil {
		return q, err
	}
	return q, nil
}

// maxComparePasses caps one comparison's work: Σ lanes max(1, beam width)
// × tokens (6 beam lanes of width 8 over 256 tokens would be 12,288).
const maxComparePasses = 2048

// runCompare parses the lanes and runs (or fetches) the comparison.
func (s *Server) runCompare(c echo.Context, q compareQuery) (*compare.Result, *model.Model, error) {
	if len(q.lanes) < 2 || len(q.lanes) > 6 {
		return nil, nil, fmt.Errorf("give 2 to 6 lanes, got %d", len(q.lanes))
	}
	var shared *uint64
	if q.seed != "" {
		v, err := strconv.ParseUint(q.seed, 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("shared seed %q is not a whole number", q.seed)
		}
		shared = &v
	}
	var lanes []compare.Strategy
	for _, l := range q.lanes {
		st, err := compare.ParseLane(l, shared)
		if err != nil {
			return nil, nil, err
		}
		if !st.Params.SeedSet && st.Kind == "sample" { // a shareable URL needs fixed seeds
			return nil, nil, fmt.Errorf("lane %q has no seed: add seed=N to it or set a shared seed, so the link reproduces it", l)
		}
		lanes = append(lanes, st)
	}
	cost := 0 // forward passes the comparison runs: a beam lane runs one per beam and token
	for _, st := range lanes {
		// a speculative round may keep one token for k draft passes and a verify
		cost += max(1, st.Width, st.K+1) * q.n
	}
	if cost > maxComparePasses {
		return nil, nil, fmt.Errorf("this comparison would run %d token passes (lanes × beam width × tokens); the limit is %d: use fewer tokens, lanes or beams", cost, maxComparePasses)
	}
	m, err := s.reg.Get(q.model)
	if err != nil {
		return nil, nil, err
	}
	key := q.values(-1).Encode()
	if r, ok := s.compares.get(key); ok && !q.again {
		return r, m, nil
	}
	ids := m.Tokenizer.EncodeIDs(q.prompt, true)
	release, err := s.admitCompare(m, len(ids), lanes, cost, q.n)
	if err != nil {
		return nil, nil, err
	}
	defer release()
	lm, err := s.reg.Engine(q.model, "auto")
	if err != nil {
		return nil, nil, err
	}
	var r *compare.Result
	if err := s.withWork(c, func(ctx context.Context) (err error) {
		r, err = compare.Run(ctx, lm, ids, lanes, compare.Options{N: q.n, Draft: func(name string) (*engine.Loaded, error) {
			return s.reg.Draft(q.model, name, "auto")
		}})
		return err
	}); err != nil {
		return nil, nil, err
	}
	s.compares.put(key, r)
	return r, m, nil
}

// comparePage serves /compare.
func (s *Server) comparePage(c echo.Context) error {
	q, err := parseCompareQuery(c, s.reg.Default())
	blank := len(q.lanes) == 0 && err == nil && q.prompt == ""
	page := present.CompareForm(s.reg.Names(), q.prompt, q.model, q.n, q.seed, q.lanes, blank)
	status := http.StatusOK
	if err != nil {
		page.Error, status = err.Error(), http.StatusBadRequest
	} else if len(q.lanes) > 0 {
		r, m, err := s.runCompare(c, q)
		if err != nil {
			status, page.Error = workError(err)
		} else {
			page.Result = present.Compare(r, m, q.step, present.CompareLinks{
				Step:  func(step int) string { return "/compare?" + q.values(step).Encode() },
				Again: func(step int) string { v := q.values(step); v.Set("measure", "again"); return "/compare?" + v.Encode() },
				Query: q.values(-1).Encode(),
			})
		}
	}
	return renderPageStatus(c, status, views.ComparePageView(page))
}

// compareExport serves /compare.json and /compare.csv.
func (s *Server) compareExport(format string) echo.HandlerFunc {
	return func(c echo.Context) error {
		q, err := parseCompareQuery(c, s.reg.Default())
		if err != nil {
			return c.String(http.StatusBadRequest, err.Error())
		}
		r, m, err := s.runCompare(c, q)
		if err != nil {
			return c.String(http.StatusBadRequest, err.Error())
		}
		if format == "json" {
			return c.JSONPretty(http.StatusOK, r, "  ")
		}
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		w.Write([]string{"lane", "strategy", "step", "token_id", "token", "logprob", "u", "forced"})
		for i, l := range r.Lanes {
			for j, st := range l.Steps {
				w.Write([]string{strconv.Itoa(i + 1), l.Strategy.Spec, strconv.Itoa(j), strconv.Itoa(int(st.Token)), string(m.Tokenizer.Bytes(st.Token)),
					strconv.FormatFloat(st.LogProb, 'g', 8, 64), strconv.FormatFloat(st.U, 'g', 8, 64), strconv.FormatBool(st.Forced)})
			}
		}
		w.Flush()
		c.Response().Header().Set("Content-Disposition", `attachment; filename="comparison.csv"`)
		return c.Blob(http.StatusOK, "text/csv; charset=utf-8", buf.Bytes())
	}
}

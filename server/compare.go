package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"stepthrough/engine"
	"stepthrough/engine/compare"
	"stepthrough/engine/model"
	"stepthrough/engine/spec"
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

// The empty form's prompt and lanes: a prompt whose first token the
// strategies already choose differently on the default model (after "Once
// upon a time" every lane writes "," first), so the lanes differ at step 1.
var (
	compareDefaultPrompt = "Once upon a time, there was a"
	compareDefaultLanes  = []string{"greedy", "temperature=0.8,seed=1", "temperature=1.5,top-p=0.9,seed=1", "beam=3"}
)

// comparePage serves /compare.
func (s *Server) comparePage(c echo.Context) error {
	q, err := parseCompareQuery(c, s.reg.Default())
	page := views.ComparePage{PromptMax: spec.MaxPromptChars, Models: s.reg.Names(), Prompt: q.prompt, Model: q.model, N: strconv.Itoa(q.n), Seed: q.seed}
	if len(q.lanes) == 0 && err == nil && q.prompt == "" {
		page.Prompt, page.LaneSpecs = compareDefaultPrompt, slices.Clone(compareDefaultLanes)
	} else {
		page.LaneSpecs = q.lanes
	}
	for len(page.LaneSpecs) < 6 {
		page.LaneSpecs = append(page.LaneSpecs, "")
	}
	status := http.StatusOK
	if err != nil {
		page.Error, status = err.Error(), http.StatusBadRequest
	} else if len(q.lanes) > 0 {
		r, m, err := s.runCompare(c, q)
		if err != nil {
			status, page.Error = workError(err)
		} else {
			page.Result = compareView(r, m, q)
		}
	}
	return renderPageStatus(c, status, views.ComparePageView(page))
}

func compareView(r *compare.Result, m *model.Model, q compareQuery) *views.CompareView {
	steps := 0
	for _, l := range r.Lanes {
		steps = max(steps, len(l.Tokens))
	}
	step := min(q.step, max(steps-1, 0))
	link := func(s int) string { return "/compare?" + q.values(s).Encode() }
	again := q.values(step)
	again.Set("measure", "again")
	v := &views.CompareView{MeasuredAt: r.MeasuredAt.Format("15:04:05"), AgainURL: "/compare?" + again.Encode(), Step: step, Steps: steps, Divergence: r.Divergence, URL: link(step), First: link(0), Prev: link(max(step-1, 0)),
		Next: link(min(step+1, steps-1)), End: link(steps - 1), JSONURL: "/compare.json?" + q.values(-1).Encode(), CSVURL: "/compare.csv?" + q.values(-1).Encode(),
		PrefillMS: r.PrefillMS, CopyMS: r.CopyMS, SeparateMS: r.SeparatePrefillMS, SavedMS: r.SeparatePrefillMS - r.PrefillMS - r.CopyMS}
	labels := laneTitles(r, m)
	if r.Divergence > step {
		v.Divergence = -1 // not reached yet at this step
	}
	tk := m.Tokenizer
	piece := func(id int32) string { return views.PieceLabel(tk.Display(id)) }
	for i, l := range r.Lanes {
		lv := views.LaneView{Index: i, Spec: l.Strategy.Spec, Title: labels[i], Seed: strconv.FormatUint(l.Seed, 10), Text: tk.Decode(l.Tokens[:min(len(l.Tokens), step+1)])}
		if l.Strategy.Kind != "sample" {
			lv.Seed = "—"
		}
		for j, id := range l.Tokens[:min(len(l.Tokens), step+1)] {
			lv.Tokens = append(lv.Tokens, views.LaneToken{Step: j, ID: id, Piece: piece(id), Diverged: r.Divergence >= 0 && j >= r.Divergence, Forced: l.Steps[j].Forced, Current: j == step})
		}
		if step < len(l.Steps) && l.Beam == nil { // a beam lane's step is the tree below
			st := l.Steps[step]
			cur := &views.LaneStepView{Greedy: st.Greedy, Forced: st.Forced, U: st.U, Chosen: st.Token, ChosenPiece: piece(st.Token),
				Round: l.Strategy.Kind == "speculative" && step > 0}
			cur.Dist = laneDist(cur)
			for _, c := range st.Top { // on one 0–100% scale
				cur.Top = append(cur.Top, views.Bar{ID: c.ID, Piece: piece(c.ID), Value: float64(c.P), Width: 100 * float64(c.P), Chosen: c.ID == st.Token})
			}
			lv.Current = cur
		}
		mt := l.Metrics
		lv.Metrics = []views.Metric{
			{Name: "tokens", Value: strconv.Itoa(mt.Tokens)}, {Name: "mean log p (model)", Value: fmt.Sprintf("%.4f", mt.MeanLogProb)}, {Name: "perplexity", Value: fmt.Sprintf("%.3f", mt.Perplexity)},
			{Name: "distinct-1 / distinct-2", Value: fmt.Sprintf("%.2f / %.2f", mt.Distinct1, mt.Distinct2)}, {Name: "repeated 3-grams", Value: strconv.Itoa(mt.RepeatedTrigrams)}, {Name: "stop", Value: mt.Stop},
			{Name: "speed (measured)", Value: l.Speed()},
		}
		if l.Speculative != nil {
			lv.Metrics = append(lv.Metrics, views.Metric{Name: "draft", Value: l.DraftSummary()})
		}
		if l.Beam != nil {
			lv.Beam = beamTree(l.Beam, step, piece)
		}
		v.Lanes = append(v.Lanes, lv)
	}
	return v
}

// laneDist names the distribution a lane's candidates column shows, which
// differs from lane to lane: a plain lane's probabilities after its own
// chain (greedy: all on the argmax), a speculative round's the target's
// (what the draft's guesses were checked against; greedy: the raw model
// at temperature 1, whose argmax the round keeps).
func laneDist(c *views.LaneStepView) string {
	switch {
	case c.Round && c.Greedy:
		return "the target model's p at temperature 1 (the round keeps its argmax)"
	case c.Round:
		return "the target's p after this lane's sampler chain (the draft's guesses are checked against it)"
	case c.Greedy:
		return "p after this lane's chain: greedy puts it all on the argmax"
	}
	return "p after this lane's sampler chain"
}

// beamTree lays out the kept hypotheses of steps 0..upto: one column per
// step, one row per beam, an edge to the parent.
func beamTree(b *compare.BeamResult, upto int, piece func(int32) string) *views.BeamTree {
	t := &views.BeamTree{Why: b.Why}
	for _, id := range b.Best.Tokens {
		t.Best += piece(id) + " "
	}
	t.Best = strings.TrimSpace(t.Best)
	onBest := func(prefix []int32) bool {
		return len(prefix) <= len(b.Best.Tokens) && slices.Equal(prefix, b.Best.Tokens[:len(prefix)])
	}
	prefixes := map[int][]int32{0: nil} // beam index at the previous step -> its tokens
	const dx, dy, x0, y0 = 110, 26, 10, 16
	prevRow := map[int]int{} // beam index at the previous step -> row
	prevRow[0] = 0
	rows := 1
	for s, st := range b.Steps {
		if s > upto {
			break
		}
		row := map[int]int{}
		nextPrefixes := map[int][]int32{}
		kept, pruned := 0, 0
		var bestPruned *compare.BeamCandidate
		for i := range st.Candidates {
			c := &st.Candidates[i]
			if !c.Kept {
				pruned++
				if bestPruned == nil {
					bestPruned = c
				}
				continue
			}
			y := y0 + kept*dy
			x := x0 + (s+1)*dx
			prefix := append(slices.Clone(prefixes[c.Parent]), c.Token)
			best := onBest(prefix)
			t.Nodes = append(t.Nodes, views.BeamNode{X: x, Y: y, Label: fmt.Sprintf("%s %.2f", piece(c.Token), c.LogProb), LogProb: c.LogProb, Done: c.Done, Best: best})
			t.Edges = append(t.Edges, views.BeamEdge{X1: x0 + s*dx, Y1: y0 + prevRow[c.Parent]*dy, X2: x, Y2: y, Best: best})
			if !c.Done {
				nextPrefixes[len(row)] = prefix
				row[len(row)] = kept
			}
			kept++
		}
		rows = max(rows, kept)
		note := fmt.Sprintf("step %d: %d candidates, %d kept, %d pruned", s+1, len(st.Candidates), kept, pruned)
		if bestPruned != nil {
			note += fmt.Sprintf(" (best pruned: %s, log p %.3f)", piece(bestPruned.Token), bestPruned.LogProb)
		}
		t.Pruned = append(t.Pruned, note)
		prevRow, prefixes = row, nextPrefixes
	}
	t.Width = x0 + (min(upto, len(b.Steps)-1)+2)*dx + 40
	t.Height = y0 + rows*dy
	return t
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

// laneTitles are the lanes' headings in words: a what-if branch says
// which lane it follows and the token it forces at which step, instead of
// its spec's ids.
func laneTitles(r *compare.Result, m *model.Model) []string {
	out := make([]string, len(r.Lanes))
	show := func(id int32) string { return views.PieceLabel(m.Tokenizer.Display(id)) }
	for i, l := range r.Lanes {
		out[i] = l.Strategy.Spec
		f := l.Strategy.Force
		if len(f) == 0 {
			continue
		}
		base := l.Strategy.Spec
		if k := strings.Index(base, "force="); k >= 0 {
			base = strings.TrimSuffix(base[:k], ",")
		}
		base = cmp.Or(base, "greedy")
		at := len(f) - 1
		out[i] = fmt.Sprintf("forces its first %d tokens (the last %s), then samples as %s", len(f), show(f[at]), base)
		for j, o := range r.Lanes {
			if j != i && len(o.Tokens) >= at && slices.Equal(o.Tokens[:at], f[:at]) && (at >= len(o.Tokens) || o.Tokens[at] != f[at]) {
				out[i] = fmt.Sprintf("what if step %d were %s? (lane %d's tokens before it, then %s)", at+1, show(f[at]), j+1, base)
				break
			}
		}
	}
	return out
}

package server

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/hooks"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
	"stepthrough/engine/trace"
	"stepthrough/lessons"
	"stepthrough/views"
)

// Session is one browser tab's state: settings, the engine session, the
// recorded step traces and where the user is in them. Its mutex makes one
// action at a time; connections come and go, the session stays until it
// has been idle too long.
type Session struct {
	mu       sync.Mutex
	id       string
	client   string
	lastUsed time.Time

	reg      *Registry
	settings views.Settings
	parsed   parsed
	m        *model.Model
	eng      *engine.Session
	engKey   string // model and backend the engine session was made for
	smp      *sample.Sampler
	rec      *trace.Recorder
	cur      trace.Cursor
	gen      []int32
	done     bool // end of generation reached
	forwards int

	viewTemp          float64
	head              int
	scores            bool
	err, notice       string
	prefillMS, ttftMS float64
	decodeMS          []float64
}

func newSession(id, client string, reg *Registry) *Session {
	s := &Session{id: id, client: client, reg: reg, lastUsed: time.Now()}
	s.settings = defaultSettings(reg.Default())
	return s
}

// close releases the engine session.
func (s *Session) close() {
	if s.eng != nil {
		s.eng.Close()
		s.eng = nil
	}
}

// run validates settings, then tokenizes and prefills the prompt and
// samples the first token, recording everything.
func (s *Session) run(ctx context.Context, set views.Settings) {
	s.err, s.notice = "", ""
	p, err := validate(set)
	if err != nil {
		s.err = err.Error() // the previous state stays on screen
		return
	}
	lm, err := s.reg.Engine(set.Model, set.Backend)
	if err != nil {
		s.err = err.Error()
		return
	}
	m := lm.Model
	key := set.Model + "|" + set.Backend
	if s.eng == nil || s.engKey != key {
		eng, err := lm.NewSession(0)
		if err != nil {
			s.err = fmt.Sprintf("model %s: %v", set.Model, err)
			return
		}
		s.close()
		s.eng, s.engKey, s.m = eng, key, m
	}
	s.settings, s.parsed = set, p
	s.eng.Reset()
	s.smp, err = sample.New(p.params)
	if err != nil {
		s.err = err.Error()
		return
	}
	s.rec = trace.NewRecorder(trace.Options{Attention: true, QKV: true, MLP: true, LastPositions: 64, Candidates: 50, Removed: 30})
	s.gen, s.done, s.decodeMS = nil, false, nil
	s.viewTemp = p.params.Temperature
	if set.Backend == "vulkan" { // auto falling back to the CPU is expected, not news
		s.notice = s.eng.Backend().Note
	}
	ctx = hooks.WithHooks(ctx, s.rec.Hooks())
	ids := s.eng.Tokenize(ctx, set.Prompt, true)
	if len(ids) == 0 {
		s.err = "the prompt has no tokens: type something"
		return
	}
	if len(ids)+p.maxTokens > s.eng.Capacity() {
		s.err = fmt.Sprintf("the prompt is %d tokens; with %d new ones that exceeds the context of %d", len(ids), p.maxTokens, s.eng.Capacity())
		return
	}
	start := time.Now()
	logits, err := s.eng.Eval(ctx, ids)
	if err != nil {
		s.err = err.Error()
		return
	}
	s.forwards++
	s.prefillMS = ms(time.Since(start))
	s.smp.Accept(ids...)
	s.sampleNext(ctx, logits)
	s.ttftMS = ms(time.Since(start))
	s.cur = trace.Cursor{Steps: s.rec.Steps()}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s *Session) sampleNext(ctx context.Context, logits []float32) {
	id := engine.Sample(ctx, s.smp, logits)
	s.smp.Accept(id)
	s.gen = append(s.gen, id)
	if s.m.Tokenizer.IsEOG(id) || len(s.gen) >= s.parsed.maxTokens {
		s.done = true
	}
}

// decode runs one more token; false when generation is over.
func (s *Session) decode(ctx context.Context) bool {
	if s.eng == nil || s.done || len(s.gen) == 0 {
		return false
	}
	ctx = hooks.WithHooks(ctx, s.rec.Hooks())
	start := time.Now()
	logits, err := s.eng.Eval(ctx, []int32{s.gen[len(s.gen)-1]})
	if err != nil {
		s.err = err.Error()
		s.done = true
		return false
	}
	s.forwards++
	s.sampleNext(ctx, logits)
	s.decodeMS = append(s.decodeMS, ms(time.Since(start)))
	s.cur.Steps = s.rec.Steps()
	return true
}

// act applies one user action.
func (s *Session) act(ctx context.Context, action string, get func(string) (string, bool)) {
	s.lastUsed = time.Now()
	switch action {
	case "run":
		set := s.settings
		applySettings(&set, get)
		s.run(ctx, set)
	case "step":
		s.err = ""
		if !s.cur.Next() && s.decode(ctx) {
			s.cur.Seek(len(s.cur.Steps)-1, 0)
		}
	case "back":
		s.err = ""
		s.cur.Prev()
	case "next-token":
		s.err = ""
		step, _ := s.cur.Position()
		if step+1 < len(s.cur.Steps) || s.decode(ctx) {
			s.cur.Seek(step+1, 0)
		}
	case "end":
		s.err = ""
		for s.decode(ctx) {
		}
		if n := len(s.cur.Steps); n > 0 {
			s.cur.Seek(n-1, len(trace.Stages(s.cur.Steps[n-1]))-1)
		}
	case "reset":
		s.err, s.notice = "", ""
		s.rec, s.gen, s.cur, s.done = nil, nil, trace.Cursor{}, false
	case "temperature":
		v, _ := get("view_temperature")
		t, err := strconv.ParseFloat(v, 64)
		if err != nil || !(t >= 0.05 && t <= 3) {
			s.err = fmt.Sprintf("temperature %q: choose 0.05 to 3", v)
			return
		}
		s.err, s.viewTemp = "", t
	case "view":
		s.err = ""
		if v, ok := get("layer"); ok { // jump to that layer's attention stage
			if n, err := strconv.Atoi(v); err == nil {
				s.seekStage("attention", n)
			}
		}
		if v, ok := get("head"); ok {
			if n, err := strconv.Atoi(v); err == nil && s.m != nil && n >= 0 && n < s.m.Config.Heads {
				s.head = n
			}
		}
		_, s.scores = get("scores")
	default:
		s.err = fmt.Sprintf("unknown action %q", action)
	}
}

// seekStage moves, within the current token step, to the first stage
// named name (and in layer, when layer >= 0); it reports whether one exists.
func (s *Session) seekStage(name string, layer int) bool {
	if len(s.cur.Steps) == 0 {
		return false
	}
	step, _ := s.cur.Position()
	for i, st := range trace.Stages(s.cur.Steps[step]) {
		if st.Name == name && (layer < 0 || st.Layer == layer) {
			return s.cur.Seek(step, i)
		}
	}
	return false
}

// seek moves to a step and stage, generating the tokens up to that step
// (used to reproduce a shared URL).
func (s *Session) seek(ctx context.Context, step, stage int) {
	for step >= len(s.cur.Steps) && s.decode(ctx) {
	}
	if !s.cur.Seek(step, stage) {
		s.notice = "that step or stage does not exist here; showing the start"
	}
}

// getter reads the first value of each query parameter.
func getter(q url.Values) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := q[k]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[0], true
	}
}

// open reproduces a view from an Explorer URL's values: the settings and
// seed run, then the step, stage, head and score view are restored. Bad
// values leave s.err or s.notice set, as run and seek do.
func (s *Session) open(ctx context.Context, get func(string) (string, bool)) {
	set := s.settings
	applySettings(&set, get)
	s.run(ctx, set)
	if s.err != "" {
		return
	}
	num := func(k string) int { v, _ := get(k); n, _ := strconv.Atoi(v); return n }
	s.seek(ctx, num("step"), num("stage"))
	if h := num("head"); h > 0 && h < s.m.Config.Heads {
		s.head = h
	}
	_, s.scores = get("scores")
}

// playLesson runs step i of a lesson: its settings and seed, then its
// token step, stage (lesson layers and heads are 1-based, 0 = unset) and
// head.
func (s *Session) playLesson(ctx context.Context, l *lessons.Lesson, i int) {
	st := l.Steps[i]
	set := defaultSettings(l.Model)
	q, _ := l.ExplorerQuery(i)
	applySettings(&set, func(k string) (string, bool) { v, ok := q[k]; return v, ok })
	s.run(ctx, set)
	if s.err != "" {
		return
	}
	s.seek(ctx, st.Token, 0)
	s.seekStage(st.Stage, st.Layer-1)
	s.head, s.scores = max(0, st.Head-1), false
}

// lessonHighlights are a lesson step's highlighted tokens with their ids
// (lessons.Check keeps each a single token of the lesson's model).
func (s *Session) lessonHighlights(st lessons.Step) []views.GenToken {
	var out []views.GenToken
	if s.m == nil {
		return nil
	}
	for _, h := range st.Highlight {
		if ids := s.m.Tokenizer.EncodeIDs(h, false); len(ids) == 1 {
			out = append(out, views.GenToken{ID: ids[0], Bytes: h})
		}
	}
	return out
}

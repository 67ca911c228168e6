// Package session is one viewer's run of the engine: a run spec goes in,
// an engine session on a shared loaded model computes it, the trace
// records every stage, and a cursor walks the stages forward and back.
// It builds the view model of wherever the viewer stands through the stage
// registry (stages.go), and it can reproduce any state from a spec, so a
// room can be rebuilt after a restart and a student can branch from it.
//
// A Session is safe for concurrent use: every exported method takes its
// lock (with defer). Errors are typed values: *spec.Error for a bad
// setting, *Error for what the run cannot do; the session is unchanged by
// a failed action.
package session

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/chat"
	"stepthrough/engine/hooks"
	"stepthrough/engine/intervene"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
	"stepthrough/engine/speculative"
	"stepthrough/engine/stop"
	"stepthrough/engine/tokenizer"
	"stepthrough/engine/trace"
	"stepthrough/lessons"
	"stepthrough/spec"
)

// Engines gives sessions the models they run, each loaded once per
// backend and shared (Registry implements it).
type Engines interface {
	Engine(model, backend string) (*engine.Loaded, error)
	// Draft is a draft model for a target (speculative decoding).
	Draft(target, draft, backend string) (*engine.Loaded, error)
	Default() string
}

// Error is something a run cannot do (the prompt has no tokens, it does
// not fit the context, no such step): a one-line message for the viewer.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func errorf(format string, a ...any) error { return &Error{fmt.Sprintf(format, a...)} }

// Session is one viewer's run: the spec it was given, the engine session,
// the recorded trace and where the viewer is in it.
type Session struct {
	mu       sync.Mutex
	id       string
	client   string
	lastUsed atomic.Int64 // unix nanoseconds; read without s.mu (the pool reads it under its own lock)
	eng      Engines

	run   spec.Run // the run as given (the seed as the user set it)
	m     *model.Model
	es    *engine.Session
	lm    *engine.Loaded // the model es runs on
	esKey string         // model and backend es was made for
	// interventions (edits.go): a session reading the same tokens without
	// the run's edits, and the one step's logits it last gave
	bes    *engine.Session
	besKey string
	// the view's weight type (versus.go): a session reading the same
	// tokens through the model converted to it
	ves    *engine.Session
	vesKey string // model and backend ves was made for
	// speculative decoding (spec.Run.Draft): the draft's engine session
	des            *engine.Session
	desKey         string
	plainStepMS    float64    // a plain decode step of the target, measured at the run's start (the median of plainSteps)
	plainStepRange [2]float64 // the fastest and slowest of those
	in             []int32    // the next pass's input, reused
	forwards       int
	runs           int // runs started: with the token step, names the model map drawn

	runState // what the current run produced: replaced whole, never field by field

	notice   string
	pool     *Pool        // nil: not counted against any limit (scratch sessions)
	reserved int64        // bytes reserved in the pool for the current run, the sessions beside it included
	runBytes int64        // the current run's own share of reserved
	expired  bool         // the pool closed this session for good
	conns    atomic.Int32 // connections attached (Attach)
}

// runState is everything one run produces and the viewer's place in it.
// A new run replaces it whole (newRunState); a reset, an expiry, a failed
// pass and a rebuild do too, so no field outlives its run.
type runState struct {
	Output // the prompt, the tokens generated and those the runtime inserted
	smp    *sample.Sampler
	rec    *trace.Recorder
	cur    trace.Cursor
	dec    *speculative.Decoder // the decoder running rounds over target and draft
	calcID int32                // the token closing a calculator call when the run executes them, else -1
	end    *stop.End            // where generation ends (the engine's stop rule)
	edits  *intervene.Set       // the run's interventions, applied to every pass (nil: none)
	// the baseline's logits (no edits) of token step baseStep
	base     []float32
	baseStep int
	// the viewed token step's pass under the view's type, and its step
	vsLast *Versus
	vsAt   int
	done   bool      // end of generation reached
	view   spec.View // head, scores and the softmax slider

	prefillMS, ttftMS float64
	decodeMS          []float64
	decodeTokens      int // tokens the timed decode steps emitted
}

// newRunState is the state before any pass.
func newRunState() runState { return runState{calcID: -1, view: spec.View{Layer: -1}} }

// Attach counts a connection holding the session until the returned
// function is called (when it goes): a session no connection holds is
// closed sooner (PoolConfig.DetachedTimeout).
func (s *Session) Attach() (detach func()) {
	s.conns.Add(1)
	return func() {
		s.conns.Add(-1)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.touch()
	}
}

// New makes an empty session for a client (an address; empty for rooms
// and scratch sessions).
func New(id, client string, eng Engines) *Session {
	s := &Session{id: id, client: client, eng: eng, run: spec.Default(eng.Default()), runState: newRunState()}
	s.touch()
	return s
}

// ID and Client identify the session.
func (s *Session) ID() string     { return s.id }
func (s *Session) Client() string { return s.client }

// LastUsed is when an action last touched the session. It takes no lock:
// the pool asks while holding its own, and a session's action may be
// waiting for the pool (a memory reservation) while holding the session's.
func (s *Session) LastUsed() time.Time { return time.Unix(0, s.lastUsed.Load()) }

func (s *Session) touch() { s.lastUsed.Store(time.Now().UnixNano()) }

// Close releases the engine session. The Session stays usable: the next
// run makes a new one.
func (s *Session) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.close()
}

// expireIfIdle closes the session for good when no action holds it and it
// has been idle at least idle; it reports whether it did.
func (s *Session) expireIfIdle(now time.Time, idle time.Duration) bool {
	if !s.mu.TryLock() {
		return false
	}
	defer s.mu.Unlock()
	if now.Sub(s.LastUsed()) < idle {
		return false
	}
	s.expire()
	return true
}

// expire closes the session for good: later actions answer ErrExpired and
// start no engine. s.mu is held.
func (s *Session) expire() {
	s.close()
	s.expired = true
	s.runState = newRunState()
}

func (s *Session) close() {
	if s.es != nil {
		s.es.Close()
		s.es = nil
	}
	s.closeDraft()
	s.closeBaseline()
	s.closeVersus()
}

// Settings is the run as last given (the seed as the user set it: empty
// for a fresh one each run).
func (s *Session) Settings() spec.Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run
}

// Spec is the run with the seed actually drawn and the viewer's current
// position: opening it reproduces this exact view.
func (s *Session) Spec() spec.Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spec()
}

func (s *Session) spec() spec.Run {
	r := s.run
	if s.smp != nil {
		r.Sampler.Seed, r.Sampler.SeedSet = s.smp.Seed(), true
	}
	r.View = s.view
	r.View.StageName, r.View.Layer, r.View.Filter = "", -1, 0
	r.View.Token, r.View.Stage = 0, 0
	if len(s.cur.Steps) > 0 {
		r.View.Token, r.View.Stage = s.cur.Position()
		_, st := s.cur.Current() // by name too: stable across token steps
		r.View.StageName, r.View.Layer, r.View.Filter = string(st.Name), st.Layer, st.SamplerStep+1
	}
	return r
}

// Run validates r, then tokenizes and prefills its prompt and samples the
// first token, recording everything. On an error the previous run stays.
func (s *Session) Run(ctx context.Context, r spec.Run) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch()
	return s.start(ctx, r)
}

func (s *Session) start(ctx context.Context, r spec.Run) error {
	if s.expired {
		return ErrExpired
	}
	s.notice = ""
	if r.Model == "" {
		r.Model = s.eng.Default()
	}
	iv, err := r.Checked()
	if err != nil {
		return err
	}
	backend := r.Backend
	lm, err := s.eng.Engine(r.Model, backend)
	if err != nil {
		return err
	}
	if err := fits(lm, r); err != nil {
		return err
	}
	edits, err := RunEdits(ctx, lm, iv)
	if err != nil {
		return err
	}
	smp, err := sample.New(r.Sampler)
	if err != nil {
		return err
	}
	key := r.Model + "|" + backend
	if s.es == nil || s.esKey != key {
		es, err := lm.NewSession(0)
		if err != nil {
			return fmt.Errorf("model %s: %w", r.Model, err)
		}
		s.close()
		s.es, s.esKey, s.m, s.lm = es, key, lm.Model, lm
	}
	if err := s.es.SetEdits(edits); err != nil {
		return errorf("%v", err)
	}
	recOpt := recordingFor(lm.Model.Config)
	rec := trace.NewRecorder(recOpt)
	hctx := hooks.WithHooks(ctx, rec.Hooks())
	calcID := int32(-1)
	if r.Tools == "calc" {
		if calcID = calcClose(lm.Model.Tokenizer); calcID < 0 {
			return errorf("tools=calc: %s has no %s token, so it cannot call the calculator", r.Model, chat.CalcClose)
		}
	}
	tokenize := s.es.Tokenize
	if r.Special {
		tokenize = s.es.TokenizeSpecial
	}
	ids := tokenize(hctx, r.Prompt, true) // fits checked its length
	draftBytes, err := s.openDraft(r, len(ids))
	if err != nil {
		return err
	}
	if s.pool != nil {
		if err := s.pool.checkLensWork(lm.Model, recOpt, len(ids), r.MaxTokens, r.DraftK); err != nil {
			return err
		}
		own := runBytes(lm.Model, recOpt, len(ids), r.MaxTokens, r.DraftK) + draftBytes
		if err := s.pool.reserve(s, own+besideBytes(lm.Model, recOpt, len(ids)+r.MaxTokens, edits != nil, false)); err != nil {
			return err
		}
		s.runBytes = own
	}
	s.es.Reset()
	start := time.Now()
	logits, err := s.es.Eval(hctx, ids)
	if err != nil {
		s.runState = newRunState() // the engine's state is gone with the failed pass
		return fmt.Errorf("the engine failed: %w", err)
	}
	s.run, s.runState = r, newRunState()
	s.smp, s.rec, s.Prompt, s.calcID, s.edits = smp, rec, ids, calcID, edits
	s.end = stop.NewEnd(s.m.Tokenizer, stop.Limits{MaxTokens: r.MaxTokens})
	s.runs++
	s.forwards++
	s.prefillMS = ms(time.Since(start))
	s.smp.Accept(ids...)
	s.sampleNext(hctx, logits)
	s.ttftMS = ms(time.Since(start))
	s.cur = trace.Cursor{Steps: s.rec.Steps()}
	if err := s.startDraft(ctx); err != nil {
		s.runState = newRunState()
		return err
	}
	if r.Backend == "vulkan" { // auto falling back to the CPU is expected, not news
		s.notice = s.es.Backend().Note
	}
	return nil
}

// recording is what the Explorer's trace keeps of every pass.
var recording = trace.Options{Attention: true, QKV: true, MLP: true, LastPositions: 64, Candidates: 50, Removed: 30}

// lensBudget bounds the models whose logit lens the Explorer records:
// vocabulary × width × layers multiply-adds per position of a pass (the
// lesson models are a few million; a 0.5B model's are billions).
const lensBudget = 64 << 20

// lensPositions are the last positions of a pass whose lens the Explorer
// keeps: its grid shows 8 (present's lensCols), and each costs a
// vocabulary-wide product and softmax per layer.
const lensPositions = 8

// recordingFor is what the trace keeps of a model's passes: recording,
// with the logit lens for a model small enough.
func recordingFor(c *model.Config) trace.Options {
	o := recording
	if int64(c.Vocab)*int64(c.Embd)*int64(c.Layers) <= lensBudget {
		o.Lens, o.LensPositions = 3, lensPositions
	}
	return o
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s *Session) sampleNext(ctx context.Context, logits []float32) {
	id := engine.Sample(ctx, s.smp, logits)
	s.smp.Accept(id)
	s.emit(id)
	s.GenAt = append(s.GenAt, len(s.Gen))
}

// emit adds a generated token, ending generation where the engine's stop
// rule says (an end-of-generation token, the run's length); it reports
// whether generation goes on.
func (s *Session) emit(id int32) bool {
	s.Gen = append(s.Gen, id)
	if _, finish := s.end.Push(id); finish != "" {
		s.done = true
	}
	return !s.done
}

// decode runs one more token; false when generation is over (or failed:
// err then says why).
func (s *Session) decode(ctx context.Context) (bool, error) {
	if s.es == nil || s.done || len(s.Gen) == 0 || s.rec == nil {
		return false, nil
	}
	if err := ctx.Err(); err != nil { // the viewer left: stop working for them
		return false, err
	}
	hctx := hooks.WithHooks(ctx, s.rec.Hooks())
	if s.dec != nil {
		return s.decodeRound(hctx)
	}
	start := time.Now()
	in := s.toolInput()
	if s.es.Pos()+len(in) > s.es.Capacity() {
		s.done = true
		return false, errorf("the tool's result does not fit the context of %d positions", s.es.Capacity())
	}
	logits, err := s.es.Eval(hctx, in)
	if err != nil {
		s.done = true
		return false, fmt.Errorf("the engine failed: %w", err)
	}
	s.forwards++
	s.sampleNext(hctx, logits)
	s.decodeMS = append(s.decodeMS, ms(time.Since(start)))
	s.decodeTokens++
	s.cur.Steps = s.rec.Steps()
	return true, nil
}

// Open runs r and moves to its view: the token step (generating up to
// it), the stage (by name and layer when r names one, else by index), the
// head, scores and slider. A position that does not exist leaves a notice
// and the start of the run.
func (s *Session) Open(ctx context.Context, r spec.Run) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch()
	return s.open(ctx, r)
}

func (s *Session) open(ctx context.Context, r spec.Run) error {
	if err := s.start(ctx, r); err != nil {
		return err
	}
	return s.show(ctx, r.View)
}

// Follow shows r: when r is the run this session holds (the same settings
// and the seed it drew; only the view differs), it moves to r's view,
// decoding further if the view is past the trace, which is what replaying
// r would give; any other run opens afresh. A server follows a room that
// another server changed this way, without replaying the run each step.
func (s *Session) Follow(ctx context.Context, r spec.Run) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch()
	if s.expired || s.smp == nil || len(s.cur.Steps) == 0 || !sameRun(s.spec(), r) {
		return s.open(ctx, r)
	}
	s.notice = ""
	return s.show(ctx, r.View)
}

// sameRun reports whether a and b differ at most in their views.
func sameRun(a, b spec.Run) bool {
	a.View, b.View = spec.View{}, spec.View{}
	return reflect.DeepEqual(a, b)
}

// show moves to view v of the run, decoding as far as it needs.
func (s *Session) show(ctx context.Context, v spec.View) error {
	for v.Token >= len(s.cur.Steps) {
		more, err := s.decode(ctx)
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	found := false
	if v.StageName != "" {
		found = s.cur.Seek(v.Token, 0) && s.seekStage(trace.Kind(v.StageName), v.Layer, v.Filter-1)
	} else {
		found = s.cur.Seek(v.Token, v.Stage)
	}
	if !found {
		s.notice = "that step or stage does not exist here; showing the start"
	}
	if v.Head >= 0 && v.Head < s.m.Config.Heads {
		s.view.Head = v.Head
	}
	s.view.Scores = v.Scores
	if v.Temperature > 0 {
		s.view.Temperature = v.Temperature
	}
	if v.TopP > 0 {
		s.view.TopP = v.TopP
	}
	s.compareWith(ctx, v.Vs)
	return nil
}

// seekStage moves, within the current token step, to the first stage of
// kind k (in layer, for attention and MLP, when layer >= 0; at sampler
// step filter when filter >= 0); it reports whether one exists.
func (s *Session) seekStage(k trace.Kind, layer, filter int) bool {
	if len(s.cur.Steps) == 0 {
		return false
	}
	step, _ := s.cur.Position()
	layered := k == trace.StageAttention || k == trace.StageMLP
	for i, st := range trace.Stages(s.cur.Steps[step]) {
		if st.Name == k && (!layered || layer < 0 || st.Layer == layer) && (filter < 0 || st.SamplerStep == filter) {
			return s.cur.Seek(step, i)
		}
	}
	return false
}

// Act applies one viewer action: run (with the settings form's fields in
// get), step, back, next-token, end, reset, temperature
// (view_temperature), top_p (view_top_p), view (layer, head, scores), goto (stage, with its
// 1-based layer or sampler filter: a click on the model map).
func (s *Session) Act(ctx context.Context, action string, get spec.Getter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch()
	if s.expired {
		return ErrExpired
	}
	switch action {
	case ActionRun:
		base := s.run
		base.View = spec.View{Layer: -1} // the form's run starts at its beginning
		r, err := spec.FromForm(get, base)
		if err != nil {
			return err
		}
		vs := s.view.Vs // the type compared with is the viewer's choice: it stays
		if r.Draft != "" {
			vs = ""
		}
		r.View = spec.View{Layer: -1, Vs: vs}
		if err := s.start(ctx, r); err != nil {
			return err
		}
		s.compareWith(ctx, vs)
	case ActionStep:
		if !s.cur.Next() {
			more, err := s.decode(ctx)
			if more {
				s.cur.Seek(len(s.cur.Steps)-1, 0)
			}
			return err
		}
	case ActionBack:
		s.cur.Prev()
	case ActionNextToken:
		step, _ := s.cur.Position()
		more := step+1 < len(s.cur.Steps)
		if !more {
			var err error
			if more, err = s.decode(ctx); err != nil {
				return err
			}
		}
		if more {
			s.cur.Seek(step+1, 0)
		}
	case ActionEnd:
		for {
			more, err := s.decode(ctx)
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
		if n := len(s.cur.Steps); n > 0 {
			s.cur.Seek(n-1, len(trace.Stages(s.cur.Steps[n-1]))-1)
		}
	case ActionReset:
		s.notice = ""
		vs := s.view.Vs // the type compared with is the viewer's choice, as the picker shows it
		s.runState = newRunState()
		s.view.Vs = vs
	case ActionWhatIfTemperature:
		return spec.SetSlider(get, "view_temperature", &s.view)
	case ActionWhatIfTopP:
		return spec.SetSlider(get, "view_top_p", &s.view)
	case ActionGoto:
		return s.gotoStage(get)
	case ActionAblate:
		return s.toggleEdit(ctx, get)
	case ActionVs:
		return s.setVs(ctx, get)
	case ActionView:
		p, err := spec.PickFrom(get)
		if err != nil {
			return err
		}
		if p.Layer >= 0 { // jump to that layer's attention stage
			s.seekStage(trace.StageAttention, p.Layer, -1)
		}
		if s.m != nil && p.Head >= 0 && p.Head < s.m.Config.Heads {
			s.view.Head = p.Head
		}
		s.view.Scores = p.Scores
	default:
		return errorf("unknown action %q", action)
	}
	return nil
}

// PlayLesson opens step i of a lesson: its run (prompt, settings and seed
// carried forward) and its view (token step, stage, layer, head).
func (s *Session) PlayLesson(ctx context.Context, l *lessons.Lesson, i int) error {
	if i < 0 || i >= len(l.Steps) {
		return errorf("%s has no step %d", l.Title, i+1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch()
	return s.open(ctx, l.Steps[i].Run)
}

// Rebuild replays the session's own spec in a fresh engine session (after
// a failure left its state in doubt); a session that has not run stays
// empty.
func (s *Session) Rebuild(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec == nil || len(s.cur.Steps) == 0 {
		return nil
	}
	r := s.spec()
	s.close()
	s.runState = newRunState()
	return s.open(ctx, r)
}

// Current is the trace step the viewer is at and the model's tokenizer;
// ok is false before a run.
func (s *Session) Current() (st *trace.Step, tk *tokenizer.Tokenizer, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cur.Steps) == 0 || s.m == nil {
		return nil, nil, false
	}
	st, _ = s.cur.Current()
	return st, s.m.Tokenizer, true
}

// Tokenizer is the tokenizer of the model that last ran, or nil.
func (s *Session) Tokenizer() *tokenizer.Tokenizer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		return nil
	}
	return s.m.Tokenizer
}

// Backend says what computed the run (and why, after a fallback).
func (s *Session) Backend() engine.BackendInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.es == nil {
		return engine.BackendInfo{}
	}
	return s.es.Backend()
}

// HasRun reports whether a run's trace is there to show.
func (s *Session) HasRun() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.cur.Steps) > 0
}

// DecodeUntil generates on, as the Explorer's steps do (a tool's results
// inserted), until until holds for where the session stands or the run
// ends; until nil runs to the end.
func (s *Session) DecodeUntil(ctx context.Context, until func(*Snapshot) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch()
	for {
		if until != nil {
			if sn := s.snapshot(); until(&sn) {
				return nil
			}
		}
		more, err := s.decode(ctx)
		if err != nil || !more {
			return err
		}
	}
}

// Engines is where the session gets its models.
func (s *Session) Engines() Engines { return s.eng }

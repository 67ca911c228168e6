package session

import (
	"context"
	"maps"
	"slices"

	"stepthrough/engine/intervene"
	"stepthrough/engine/model"
	"stepthrough/engine/trace"
	"stepthrough/spec"
)

// Output is what a run wrote: the prompt's tokens, the generated ones and
// what the runtime inserted between them (a tool's result).
type Output struct {
	Prompt []int32
	Gen    []int32
	// GenAt[i] is how many tokens were generated after token step i (a
	// speculative round emits several)
	GenAt []int
	// Inserts are the tokens the runtime wrote after Gen[i], read by the
	// pass of token step i+1
	Inserts map[int][]int32
	Calls   []string // the calculator calls the runtime executed
}

// GenBefore is how many tokens were generated before token step step.
func (o *Output) GenBefore(step int) int {
	if step <= 0 || len(o.GenAt) == 0 {
		return 0
	}
	return o.GenAt[min(step, len(o.GenAt))-1]
}

// Written is the run's tokens in position order from token step from on:
// each sampled token followed by what the runtime inserted after it; from
// -1 puts the prompt first.
func (o *Output) Written(from int) []int32 {
	var seq []int32
	if from < 0 {
		seq, from = append(seq, o.Prompt...), 0
	}
	for i := from; i < len(o.Gen); i++ {
		seq = append(append(seq, o.Gen[i]), o.Inserts[i]...)
	}
	return seq
}

// Snapshot is where a session stands, copied under its lock: what the
// presentation (package present) and the claim checks (package verify)
// read. Its slices are the run's own, appended to but never rewritten,
// and the trace's steps are complete: read them, never change them.
type Snapshot struct {
	Output
	Run      spec.Run     // the run as given (the seed as the user set it)
	Spec     spec.Run     // the run with its seed drawn and the viewer's position: it reproduces this view
	Model    *model.Model // nil before the first run
	Backend  string       // what computes the run ("" before one), with the reason after a fallback
	Capacity int          // the positions the engine session holds
	Default  string       // the model a new session runs
	Cursor   trace.Cursor // the recorded steps and where the viewer is
	Done     bool         // generation has ended
	View     spec.View    // head, scores and the sliders
	Seed     uint64       // the seed actually drawn
	Notice   string       // what the last action could not do as asked
	Forwards int          // forward passes run
	Runs     int          // runs started: with the token step, names the model map drawn

	// Edits are the run's interventions as its passes apply them (its
	// ablations and its steering, the direction computed); nil: none.
	Edits *intervene.Set
	// Baseline is the current token step's next-token logits without the
	// run's interventions (nil when it has none): the "before" beside the
	// trace's "after".
	Baseline []float32
	// Versus is the current token step's pass under the view's weight
	// type (spec.View.Vs; nil without one).
	Versus *Versus

	PrefillMS, TTFTMS float64
	DecodeMS          []float64  // each timed decode step
	DecodeTokens      int        // tokens the timed decode steps emitted
	PlainStepMS       float64    // a plain decode step, timed at a speculative run's start (the median)
	PlainStepRange    [2]float64 // the fastest and slowest of those runs
}

// HasRun reports whether a run's trace is there to show.
func (s *Snapshot) HasRun() bool { return len(s.Cursor.Steps) > 0 && s.Model != nil }

// Snapshot copies where the session stands, with the current step's
// baseline when the run has interventions (a forward pass without them,
// once per step viewed).
func (s *Session) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := s.snapshot()
	if len(s.cur.Steps) > 0 && s.edits != nil {
		step, _ := s.cur.Position()
		if b, err := s.baseline(context.Background(), step); err == nil {
			sn.Baseline = b
		} else {
			sn.Notice = "the run without its interventions could not be computed: " + err.Error()
		}
	}
	if len(s.cur.Steps) > 0 && s.view.Vs != "" {
		step, _ := s.cur.Position()
		if v, err := s.versus(context.Background(), step); err == nil {
			sn.Versus = v
		} else {
			sn.Notice = err.Error()
		}
	}
	return sn
}

func (s *Session) snapshot() Snapshot {
	out := s.Output
	out.Inserts, out.Calls = maps.Clone(s.Inserts), slices.Clone(s.Calls)
	snap := Snapshot{Output: out, Run: s.run, Spec: s.spec(), Model: s.m, Cursor: s.cur, Done: s.done, View: s.view,
		Notice: s.notice, Forwards: s.forwards, Runs: s.runs, PrefillMS: s.prefillMS, TTFTMS: s.ttftMS,
		DecodeMS: s.decodeMS, DecodeTokens: s.decodeTokens, PlainStepMS: s.plainStepMS, PlainStepRange: s.plainStepRange, Edits: s.edits}
	if s.smp != nil {
		snap.Seed = s.smp.Seed()
	}
	if s.es != nil {
		snap.Backend, snap.Capacity = s.es.Backend().String(), s.es.Capacity()
	}
	if s.eng != nil {
		snap.Default = s.eng.Default()
	}
	return snap
}

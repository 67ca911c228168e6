package session

import (
	"net/url"
	"slices"
	"strconv"

	"stepthrough/engine/spec"
	"stepthrough/engine/trace"
	"stepthrough/views"
)

// Rows drawn as heat strips at most (each value is a cell with its number
// on hover); a long prompt's earlier rows are counted, not drawn.
const (
	maxEmbedRows = 4
	// stripBudget is the values a panel's strips carry at most (about
	// 16 KB as half floats): a wide model draws fewer rows, layers or units.
	stripBudget    = 6000
	maxKVLayers    = 6  // layers whose newest K and V rows are drawn
	maxKVPositions = 24 // positions listed in the cache table
)

// Explorer builds the view model of the viewer's current view (without
// an error: the caller shows the error its action returned).
func (s *Session) Explorer() views.Explorer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.explorer()
}

func (s *Session) explorer() views.Explorer {
	e := views.Explorer{Notice: s.notice, Forwards: s.forwards}
	if s.es != nil {
		e.BackendInfo = s.es.Backend().String()
	}
	if s.rec == nil || len(s.cur.Steps) == 0 {
		e.End = true
		if s.eng != nil && s.eng.Default() == "lesson.gguf" { // the examples are checked on it
			e.Examples = Examples()
		}
		return e
	}
	step, si := s.cur.Position()
	st, stage := s.cur.Current()
	stages := trace.Stages(st)
	for i, x := range stages {
		e.Stages = append(e.Stages, views.Stage{Index: i, Name: string(x.Name), Label: labelOf(st, x), Layer: x.Layer, SamplerStep: x.SamplerStep, Current: i == si, Done: i < si})
	}
	e.Current = e.Stages[si]
	e.Step, e.Steps = step, len(s.cur.Steps)
	e.Seed = strconv.FormatUint(s.smp.Seed(), 10)
	e.URL = s.url(stage)
	e.End = step == len(s.cur.Steps)-1 && si == len(stages)-1 && s.done
	tk := s.m.Tokenizer
	shown := s.genBefore(step + 1)
	if st.Speculative != nil && !slices.Contains([]trace.Kind{trace.StageAccept, trace.StageRollback}, stage.Name) {
		shown = s.genBefore(step) // a round's output is known from its verdicts on
	} else if st.Speculative == nil && stageIndex(e.Stages, trace.StageSample) > si {
		shown = s.genBefore(step) // no spoilers: this step's token is not drawn yet
	}
	for i, id := range s.gen[:shown] {
		e.Generated = append(e.Generated, views.GenToken{ID: id, Bytes: tk.Display(id)})
		if i < step {
			for _, r := range s.inserts[i] {
				e.Generated = append(e.Generated, views.GenToken{ID: r, Bytes: tk.Display(r), Inserted: true})
			}
		}
	}
	if n := s.runtimeNote(step); n != "" && e.Notice == "" {
		e.Notice = n
	}
	e.Timing = views.Timing{PrefillMS: s.prefillMS, TTFTMS: s.ttftMS, HaveGen: true}
	if s.decodeTokens > 0 {
		var sum float64
		for _, d := range s.decodeMS {
			sum += d
		}
		e.Timing.TPOTMS = sum / float64(s.decodeTokens)
	}
	e.Panel = stageOf(stage.Name).build(s, st, stage)
	e.Map = s.modelMap(st, e.Stages, si)
	e.Map.Key = strconv.Itoa(s.runs) // the drawing is the run's; each step sends its numbers
	return e
}

// url is the Explorer link that reproduces this view: the settings with
// the seed drawn, the step and stage, and the head shown at attention.
func (s *Session) url(stage trace.Stage) string {
	r := s.spec()
	if stage.Name != trace.StageAttention {
		r.View.Head = 0
	}
	r.View.Scores, r.View.Temperature, r.View.TopP = false, 0, 0
	return "/?" + r.Query().Encode()
}

// Form is the run's settings as the Explorer's form shows them.
func Form(r spec.Run) views.Settings {
	f := r.Form()
	return views.Settings{PromptMax: spec.MaxPromptChars, Prompt: f["prompt"], Model: f["model"], Backend: f["backend"], Temperature: f["temperature"], TopK: f["top_k"],
		TopP: f["top_p"], MinP: f["min_p"], TypicalP: f["typical_p"], RepeatPenalty: f["repeat_penalty"], RepeatLastN: f["repeat_last_n"],
		FreqPen: f["frequency_penalty"], PresPen: f["presence_penalty"], Seed: f["seed"], Order: f["order"], MaxTokens: f["max_tokens"],
		Special: f["special"], Tools: f["tools"], Draft: f["draft"], DraftK: f["draft_k"]}
}

// laneSpec writes the run's sampler settings as a Compare lane, with the
// seed actually used, so the lane reproduces this run.
func (s *Session) laneSpec() string {
	p := s.run.Sampler
	p.Seed, p.SeedSet = s.smp.Seed(), true
	return spec.Lane(p)
}

// branchURL opens Compare with this run and a branch that takes the same
// tokens up to step and then token instead.
func (s *Session) branchURL(step int, token int32) string {
	if step >= len(s.gen) || s.run.Draft != "" {
		return "" // a speculative run's sample stage is its first token's only
	}
	force := ""
	for _, id := range s.gen[:step] {
		force += strconv.Itoa(int(id)) + ">"
	}
	force += strconv.Itoa(int(token))
	lane := s.laneSpec()
	q := url.Values{"prompt": {s.run.Prompt}, "model": {s.run.Model}, "n": {strconv.Itoa(min(s.run.MaxTokens, 256))},
		"lane": {lane, lane + ",force=" + force}, "step": {strconv.Itoa(step)}}
	return "/compare?" + q.Encode()
}

// Package present turns a session's snapshot into the view models the
// templ components in views draw: the stage registry (each stage's
// pipeline rank, label and panel builder), the panels, the model map and
// the Explorer page. It only reads: every function here is over a
// session.Snapshot, and no package below it switches on a stage name.
package present

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"

	"stepthrough/engine/intervene"
	"stepthrough/engine/trace"
	"stepthrough/session"
	"stepthrough/spec"
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

// snap is the session's snapshot the builders read.
type snap struct{ *session.Snapshot }

// Explorer builds the view model of where a session stands (without an
// error: the caller shows the error its action returned).
func Explorer(se *session.Session) views.Explorer {
	sn := se.Snapshot()
	s := &snap{&sn}
	e := views.Explorer{Notice: s.Notice, Forwards: s.Forwards, BackendInfo: s.Backend, Picker: s.picker()}
	if !s.HasRun() {
		e.End = true
		if s.Default == "lesson.gguf" { // the examples are checked on it
			e.Examples = Examples()
		}
		return e
	}
	step, si := s.Cursor.Position()
	st, stage := s.Cursor.Current()
	stages := trace.Stages(st)
	for i, x := range stages {
		e.Stages = append(e.Stages, viewStage(st, i, x, si))
	}
	e.Current = e.Stages[si]
	e.Step, e.Steps = step, len(s.Cursor.Steps)
	e.Seed = strconv.FormatUint(s.Seed, 10)
	e.URL = s.url(stage)
	e.End = step == len(s.Cursor.Steps)-1 && si == len(stages)-1 && s.Done
	shown := s.GenBefore(step + 1)
	if st.Speculative != nil && !slices.Contains([]trace.Kind{trace.StageAccept, trace.StageRollback}, stage.Name) {
		shown = s.GenBefore(step) // a round's output is known from its verdicts on
	} else if st.Speculative == nil && stageIndex(e.Stages, trace.StageSample) > si {
		shown = s.GenBefore(step) // no spoilers: this step's token is not drawn yet
	}
	e.Generated = s.generated(shown, step)
	e.SoFar = views.TextSoFar{Prompt: s.Spec.Prompt}
	for _, t := range s.generated(s.GenBefore(step), step) {
		e.SoFar.Generated += t.Text
	}
	if n := s.runtimeNote(step); n != "" && e.Notice == "" {
		e.Notice = n
	}
	e.Timing = views.Timing{PrefillMS: s.PrefillMS, TTFTMS: s.TTFTMS, HaveGen: true}
	if s.DecodeTokens > 0 {
		var sum float64
		for _, d := range s.DecodeMS {
			sum += d
		}
		e.Timing.TPOTMS, e.Timing.Decoded = sum/float64(s.DecodeTokens), len(s.DecodeMS)
		if len(s.DecodeMS) > 0 {
			e.Timing.TPOTRange = [2]float64{slices.Min(s.DecodeMS), slices.Max(s.DecodeMS)}
		}
	}
	e.Panel = stageOf(stage.Name).build(s, st, stage)
	e.Edits = s.editEffect(st)
	e.Ablate = s.Run.Ablate.String()
	e.Versus = s.versus(st, stage)
	e.Map = s.modelMap(st, e.Stages, si)
	if e.Versus != nil {
		e.Map.Drift = driftMarks(e.Versus.Drift)
	}
	e.Map.Key = strconv.Itoa(s.Runs) // the drawing is the run's; each step sends its numbers
	return e
}

// generated is the first n generated tokens, each followed by what the
// runtime wrote after it once token step step reads it.
func (s *snap) generated(n, step int) []views.GenToken {
	tk := s.Model.Tokenizer
	var out []views.GenToken
	var ids []int32
	for i, id := range s.Gen[:n] {
		out, ids = append(out, views.GenToken{ID: id}), append(ids, id)
		if i < step {
			for _, r := range s.Inserts[i] {
				out, ids = append(out, views.GenToken{ID: r, Inserted: true}), append(ids, r)
			}
		}
	}
	for i, t := range texts(tk, ids) {
		out[i].Bytes, out[i].Text = tk.Display(out[i].ID), t
	}
	return out
}

// url is the Explorer link that reproduces this view: the settings with
// the seed drawn, the step and stage, and the head shown at attention.
func (s *snap) url(stage trace.Stage) string {
	r := s.Spec
	if stage.Name != trace.StageAttention {
		r.View.Head = 0
	}
	r.View.Scores, r.View.Temperature, r.View.TopP = false, 0, 0
	return "/?" + r.Query().Encode()
}

// Form is the run's settings as the Explorer's form shows them.
func Form(r spec.Run) views.Settings { return FormShowing(r, nil) }

// FormShowing is Form with some fields showing what the viewer typed
// instead (by form key): a value the run refused, back in its box to fix.
func FormShowing(r spec.Run, typed map[string]string) views.Settings {
	f := r.Form()
	for k, v := range typed {
		f[k] = v
	}
	return views.Settings{PromptMax: spec.MaxPromptChars, Prompt: f["prompt"], Model: f["model"], Backend: f["backend"], Temperature: f["temperature"], TopK: f["top_k"],
		TopP: f["top_p"], MinP: f["min_p"], TypicalP: f["typical_p"], RepeatPenalty: f["repeat_penalty"], RepeatLastN: f["repeat_last_n"],
		FreqPen: f["frequency_penalty"], PresPen: f["presence_penalty"], Seed: f["seed"], Order: f["order"], MaxTokens: f["max_tokens"],
		Special: f["special"], Tools: f["tools"], Draft: f["draft"], DraftK: f["draft_k"], Ablate: f["ablate"], AblateMax: intervene.MaxSetChars, Steer: f["steer"],
		MeanOver: f["mean_over"], MeanOverMax: spec.MaxMeanOverChars,
		Backends: spec.Backends, MaxTokensMax: spec.MaxNewTokens, DraftKMax: spec.MaxDraftK, DraftKDefault: strconv.Itoa(spec.DefaultDraftK)}
}

// laneSpec writes the run's sampler settings as a Compare lane, with the
// seed actually used, so the lane reproduces this run.
func (s *snap) laneSpec() string {
	p := s.Run.Sampler
	p.Seed, p.SeedSet = s.Seed, true
	return spec.Lane(p)
}

// branchURL opens Compare with this run and a branch that takes the same
// tokens up to step and then token instead.
func (s *snap) branchURL(step int, token int32) string {
	if step >= len(s.Gen) || s.Run.Draft != "" {
		return "" // a speculative run's sample stage is its first token's only
	}
	force := ""
	for _, id := range s.Gen[:step] {
		force += strconv.Itoa(int(id)) + ">"
	}
	force += strconv.Itoa(int(token))
	lane := s.laneSpec()
	q := url.Values{"prompt": {s.Run.Prompt}, "model": {s.Run.Model}, "n": {strconv.Itoa(min(s.Run.MaxTokens, 256))},
		"lane": {lane, lane + ",force=" + force}, "step": {strconv.Itoa(step)}}
	return "/compare?" + q.Encode()
}

// runtimeNote says what the runtime inserted before token step step.
func (s *snap) runtimeNote(step int) string {
	res, ok := s.Inserts[step-1]
	if !ok {
		return ""
	}
	tk := s.Model.Tokenizer
	return fmt.Sprintf("The model closed a calculator call, so the runtime computed it and wrote %s after it; this inference pass reads those %d tokens along with the call's last one.", tk.Decode(res), len(res))
}

// Page is the Explorer page's view model: where se stands (with err, the
// run's error, shown in it), the settings form for settings, and the
// offered models with their labels.
func Page(se *session.Session, settings spec.Run, models []string, label func(string) string, err error) views.Page {
	e := Explorer(se)
	if err != nil {
		e.Error = err.Error()
	}
	p := views.Page{Models: models, ModelLabels: map[string]string{}, Settings: Form(settings), SessionID: se.ID(), Explorer: e}
	for _, m := range models {
		p.ModelLabels[m] = label(m)
	}
	return p
}

// Package lessons reads lesson files: plain text an instructor can write
// without programming. A lesson has front matter (title, summary, level,
// duration, model) and a sequence of steps; each step sets the Explorer's
// state (prompt, settings, seed, token step, stage, layer/head, what to
// highlight), carries narration, optional instructor-only notes, and an
// optional question whose answer the engine reveals. The format is
// documented in README.md beside this file.
//
// # Security
//
// Lesson files are untrusted: sizes are capped, every key is checked, and
// errors name the file, the line and what is wrong. Parse never panics
// (FuzzParse).
package lessons

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"stepthrough/engine/trace"
	"stepthrough/spec"
)

// Limits on a lesson file.
const (
	MaxBytes     = 256 << 10
	MaxSteps     = 100
	MaxLineBytes = 4096
	MaxChoices   = 8
	MaxClaims    = 16
	// a step's sources (source: lines), each a citation
	MaxSources     = 8
	MaxSourceBytes = 400
)

// Lesson is a parsed lesson file.
type Lesson struct {
	File     string
	Title    string
	Summary  string
	Level    string // beginner, intermediate, advanced
	Duration string // free text, e.g. "10 min"
	Model    string // model file name, e.g. lesson.gguf
	Steps    []Step
}

// Step is one stop of a lesson.
type Step struct {
	Line  int // where the step starts in the file
	Title string
	// Run is the run this step shows (the lesson codec of the run spec):
	// prompt, model, backend, sampler settings and seed carried forward
	// from the step before unless this step names them, and the view
	// (token step, stage, layer, head) this step names.
	Run         spec.Run
	SetsBackend bool   // this step chooses a backend (the page then says which ran)
	Token       int    // token step (0 = the prompt's own step)
	Stage       string // a stage name (trace.Kinds)
	Layer       int    // for attention and mlp: 1-based, 0 = unset
	Head        int    // for attention: 1-based, 0 = unset
	// Vs is a weight type whose values the step shows beside the model's
	// at its stage ("vs: Q4_0"; spec.View.Vs)
	Vs        string
	Highlight []string
	// Patch is a corrupted prompt ("patch:"): the step shows activation
	// patching's grid from its prompt (clean) into this one, as the
	// /patching page draws it (with the panel: while a question is open,
	// the grid waits for the answer too).
	Patch string
	// PanelShown keeps the stage's panel in view while the step's question
	// is open ("panel: shown"): for a question about what the panel shows
	// whose answer is not in it. Otherwise the numbers wait for the answer.
	PanelShown bool
	Narration  string
	Notes      string // instructor only
	// Prose is the narration a student reads (Narration, then After) line
	// by line, each with its line in the file, for checks that report
	// where a sentence is (Unsourced).
	Prose []ProseLine
	// Sources cite what the step says about inference in general (other
	// engines, GPUs, providers, papers): a statement about this model is a
	// claim (Claims), one about the field carries its source here.
	Sources  []string
	Question *Question
	// After is the narration written after the question: shown once the
	// question is answered (in a room, once the instructor reveals), so
	// the text that explains the answer does not give it away.
	After string
	// Claims are the facts the narration states, verified against the
	// engine (claims.go).
	Claims []Claim
}

// ProseLine is one line of a step's narration and where it is.
type ProseLine struct {
	Line  int
	Text  string
	After bool // written after the step's question
}

// Question is asked before the engine reveals the answer.
type Question struct {
	Kind    string   // next-token, probability, survivors, choice
	Text    string   // what is asked
	Choices []string // for next-token and choice (optional for next-token)
	Answer  string   // for choice: the right choice; the others are revealed by the engine
}

// QuestionKinds are the supported question kinds.
var QuestionKinds = []string{"next-token", "probability", "survivors", "choice"}

// isSetting reports whether k is a run setting a step may set (the run
// spec's lesson keys).
func isSetting(k string) bool { return slices.Contains(spec.LessonKeys(), k) }

// stageNames are the stage names a step may show, in pipeline order.
func stageNames() []string {
	out := make([]string, len(trace.Kinds))
	for i, k := range trace.Kinds {
		out[i] = string(k)
	}
	return out
}

// Error is a problem at a line of a lesson file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Parse reads a lesson. name is used in error messages.
func Parse(name string, data []byte) (*Lesson, error) {
	if len(data) > MaxBytes {
		return nil, &Error{name, 1, fmt.Sprintf("file is %d bytes; the limit is %d", len(data), MaxBytes)}
	}
	p := &parser{name: name, l: &Lesson{File: name}}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 0, 4096), MaxLineBytes)
	for sc.Scan() {
		p.line++
		if err := p.feed(sc.Text()); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, &Error{name, p.line + 1, fmt.Sprintf("line too long (at most %d bytes)", MaxLineBytes)}
	}
	return p.finish()
}

type parser struct {
	name    string
	line    int
	l       *Lesson
	state   int // 0 before front matter, 1 in it, 2 body
	step    *Step
	inNotes bool
}

func (p *parser) errf(format string, a ...any) error {
	return &Error{p.name, p.line, fmt.Sprintf(format, a...)}
}

func (p *parser) feed(line string) error {
	if !utf8.ValidString(line) {
		return p.errf("the line is not valid UTF-8: save the lesson as UTF-8")
	}
	trimmed := strings.TrimSpace(line)
	switch p.state {
	case 0:
		if trimmed == "" {
			return nil
		}
		if trimmed != "---" {
			return p.errf("a lesson starts with front matter: a line \"---\", then title:, model: …, then \"---\"")
		}
		p.state = 1
		return nil
	case 1:
		if trimmed == "---" {
			p.state = 2
			return nil
		}
		if trimmed == "" {
			return nil
		}
		k, v, ok := strings.Cut(trimmed, ":")
		if !ok {
			return p.errf("front matter lines are key: value, got %q", trimmed)
		}
		v, err := p.text(strings.TrimSpace(v)) // title: "A: b" keeps its colon, not its quotes
		if err != nil {
			return err
		}
		switch strings.TrimSpace(k) {
		case "title":
			p.l.Title = v
		case "summary":
			p.l.Summary = v
		case "level":
			if !contains([]string{"beginner", "intermediate", "advanced"}, v) {
				return p.errf("level %q: choose beginner, intermediate or advanced", v)
			}
			p.l.Level = v
		case "duration":
			p.l.Duration = v
		case "model":
			p.l.Model = v
		default:
			return p.errf("unknown front matter key %q (title, summary, level, duration, model)", k)
		}
		return nil
	}
	if strings.HasPrefix(trimmed, "## ") {
		if len(p.l.Steps) >= MaxSteps {
			return p.errf("more than %d steps", MaxSteps)
		}
		// a step starts from the previous step's run: it changes only what it names
		run := spec.Default(p.l.Model)
		if n := len(p.l.Steps); n > 0 {
			run = p.l.Steps[n-1].Run
			run.Sampler.Order = slices.Clone(run.Sampler.Order)
		}
		run.View = spec.View{Layer: -1}
		p.l.Steps = append(p.l.Steps, Step{Line: p.line, Title: strings.TrimSpace(strings.TrimPrefix(trimmed, "## ")), Run: run})
		p.step, p.inNotes = &p.l.Steps[len(p.l.Steps)-1], false
		return nil
	}
	if p.step == nil {
		if trimmed == "" {
			return nil
		}
		return p.errf("text before the first step: start a step with \"## Title\"")
	}
	s := p.step
	switch {
	case strings.HasPrefix(trimmed, "> "): // instructor-only note
		s.Notes = strings.TrimSpace(s.Notes + "\n" + strings.TrimPrefix(trimmed, "> "))
		return nil
	case strings.HasPrefix(trimmed, "? "):
		return p.question(strings.TrimPrefix(trimmed, "? "))
	case strings.HasPrefix(trimmed, "- ") && s.Question != nil: // after a question, "- " lines are its choices
		c := strings.TrimSpace(strings.TrimPrefix(trimmed, "- "))
		marked := strings.HasPrefix(c, "(x) ")
		c, err := p.text(strings.TrimPrefix(c, "(x) "))
		switch {
		case err != nil:
			return err
		case marked && s.Question.Answer != "":
			return p.errf("two answers marked (x)")
		case len(s.Question.Choices) >= MaxChoices:
			return p.errf("more than %d choices", MaxChoices)
		case len(c) > MaxAnswerBytes:
			return p.errf("a choice of %d bytes: students' answers are at most %d bytes, so it could not be picked", len(c), MaxAnswerBytes)
		}
		if marked {
			s.Question.Answer = c
		}
		s.Question.Choices = append(s.Question.Choices, c)
		return nil
	}
	if k, v, ok := strings.Cut(trimmed, ":"); ok && isKey(k) {
		return p.setting(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	if trimmed != "" {
		s.Prose = append(s.Prose, ProseLine{Line: p.line, Text: trimmed, After: s.Question != nil})
	}
	if s.Question != nil {
		s.After = strings.TrimSpace(s.After + "\n" + line)
		return nil
	}
	s.Narration = strings.TrimSpace(s.Narration + "\n" + line)
	return nil
}

func isKey(k string) bool {
	k = strings.TrimSpace(k)
	return k == "prompt" || k == "patch" || k == "token" || k == "stage" || k == "layer" || k == "head" || k == "vs" || k == "highlight" || k == "expect" || k == "panel" || k == "source" || isSetting(k)
}

// text is a value a page shows as it is written (a title, a choice):
// unquoted, and refused when its escapes make it other than UTF-8 ("\x8a"):
// a student could not send it, nor a page show it.
func (p *parser) text(s string) (string, error) {
	if u := unquote(s); utf8.ValidString(u) {
		return u, nil
	}
	return "", p.errf("%s is not valid UTF-8 once its escapes are read", s)
}

// unquote accepts "text" (to keep leading spaces, as in " Paris") or bare text.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}

func (p *parser) setting(k, v string) error {
	s := p.step
	positive := func() (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 4096 {
			return 0, p.errf("%s %q: a whole number from 1", k, v)
		}
		return n, nil
	}
	var err error
	switch k {
	case "prompt":
		s.Run.Prompt = unquote(v)
		if err := spec.CheckPrompt(s.Run.Prompt); err != nil {
			return p.errf("%v", err)
		}
	case "patch":
		s.Patch = unquote(v)
		if err := spec.CheckPrompt(s.Patch); err != nil || s.Patch == "" {
			return p.errf("patch %q: the corrupted prompt, as long in tokens as the step's prompt", v)
		}
	case "token":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 512 {
			return p.errf("token %q: the token step, 0 (the prompt) to 512", v)
		}
		s.Token = n
	case "stage":
		if !contains(stageNames(), v) {
			return p.errf("stage %q: one of %s", v, strings.Join(stageNames(), ", "))
		}
		s.Stage = v
	case "layer":
		s.Layer, err = positive()
	case "head":
		s.Head, err = positive()
	case "vs":
		s.Vs = spec.VsName(unquote(v))
	case "expect":
		if len(s.Claims) >= MaxClaims {
			return p.errf("more than %d claims in a step", MaxClaims)
		}
		c, err := parseClaim(p.line, v)
		if err != nil {
			return p.errf("%v", err)
		}
		s.Claims = append(s.Claims, c)
	case "panel":
		if v != "shown" {
			return p.errf("panel %q: the only value is shown (the panel stays in view while the question is open)", v)
		}
		s.PanelShown = true
	case "source":
		if len(s.Sources) >= MaxSources || len(v) > MaxSourceBytes {
			return p.errf("source: at most %d a step, of at most %d bytes each", MaxSources, MaxSourceBytes)
		}
		s.Sources = append(s.Sources, v)
	case "highlight":
		for _, h := range strings.Split(v, "|") {
			s.Highlight = append(s.Highlight, unquote(strings.TrimSpace(h)))
		}
	default: // a run setting, checked by the run spec's lesson codec
		if v == "" {
			return p.errf("%s has no value", k)
		}
		if err := spec.SetLesson(&s.Run, k, v); err != nil {
			return p.errf("%v", err)
		}
		s.SetsBackend = s.SetsBackend || k == "backend"
	}
	return err
}

func (p *parser) question(rest string) error {
	s := p.step
	if s.Question != nil {
		return p.errf("a step has at most one question")
	}
	kind, text, ok := strings.Cut(rest, ":")
	kind = strings.TrimSpace(kind)
	if !ok || !contains(QuestionKinds, kind) {
		return p.errf("a question is \"? kind: text\" with kind one of %s", strings.Join(QuestionKinds, ", "))
	}
	s.Question = &Question{Kind: kind, Text: strings.TrimSpace(text)}
	return nil
}

func (p *parser) finish() (*Lesson, error) {
	l := p.l
	switch {
	case p.state != 2:
		return nil, &Error{p.name, p.line, "the front matter is not closed with \"---\""}
	case l.Title == "":
		return nil, &Error{p.name, 1, "the front matter has no title"}
	case l.Model == "":
		return nil, &Error{p.name, 1, "the front matter names no model"}
	case len(l.Steps) == 0:
		return nil, &Error{p.name, p.line, "the lesson has no steps (\"## Title\")"}
	}
	for i := range l.Steps {
		s := &l.Steps[i]
		if s.Run.Prompt == "" {
			return nil, &Error{p.name, s.Line, "the first step needs a prompt:"}
		}
		if s.Stage == "" {
			s.Stage = string(trace.StageTokenize)
		}
		if k := trace.Kind(s.Stage); (s.Layer != 0 || s.Head != 0) && k != trace.StageAttention && k != trace.StageMLP {
			return nil, &Error{p.name, s.Line, "layer and head apply to the attention and mlp stages"}
		}
		if q := s.Question; q != nil {
			if q.Kind == "choice" && (len(q.Choices) < 2 || q.Answer == "") {
				return nil, &Error{p.name, s.Line, "a choice question needs at least two \"- choice\" lines, one marked \"- (x) \""}
			}
		}
		s.Run.View = spec.View{Token: s.Token, StageName: s.Stage, Layer: s.Layer - 1, Head: max(0, s.Head-1), Vs: s.Vs}
		if err := s.Run.Validate(); err != nil {
			return nil, &Error{p.name, s.Line, err.Error()}
		}
	}
	return l, nil
}

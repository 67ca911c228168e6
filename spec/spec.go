// Package spec is the one typed description of a run of the engine: the
// prompt, model, backend, sampler settings and order, seed, the number of
// new tokens, and where a viewer stands in it (token step, stage, layer,
// head). Every way a run is written down goes through this package's
// codecs — URL queries and forms, lesson files, Compare lanes, command-line
// flags and the stored room state (JSON with a version) — and one
// validation whose errors are one line naming the parameter.
//
// Names: each parameter has one canonical name ("top-p", as in lanes,
// flags and error messages) and one key for queries, forms and lesson
// files ("top_p"); the table in params.go holds both.
package spec

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"stepthrough/engine"
	"stepthrough/engine/intervene"
	"stepthrough/engine/sample"
)

// Version is the stored form's version (Run.Version). 2 added Special and
// Tools: a server of version 1 would run such a room's prompt unparsed, so
// it must refuse it. 3 added Draft and DraftK (speculative decoding).
const Version = 3

// Limits on what a run may ask for.
const (
	// MaxPromptChars is the longest prompt in characters, as the prompt
	// box counts them (its maxlength), whatever their UTF-8 length.
	MaxPromptChars = 2000
	MaxNewTokens   = 512
	MaxTokenStep   = 512
	// MaxDraftK is the most tokens a draft may propose per round
	// (engine/speculative's MaxK).
	MaxDraftK     = 16
	DefaultDraftK = 4
)

// Backends are the allowed Backend values: the engine's.
var Backends = engine.Backends

// Run is one run of the engine, as a user (or a lesson, a link, a room)
// asks for it.
type Run struct {
	Version   int           `json:"version"`
	Prompt    string        `json:"prompt"`
	Model     string        `json:"model,omitempty"` // a model file name; empty: the server's default
	Backend   string        `json:"backend"`         // auto, cpu or vulkan
	Sampler   sample.Params `json:"sampler"`
	MaxTokens int           `json:"max_tokens"`
	// Special parses special-token text in the prompt ("<|user|>" becomes
	// that control token), as llama-server does for a raw prompt; chat
	// lessons write the template's markup this way.
	Special bool `json:"special,omitempty"`
	// Tools names the tool the runtime executes when the model calls it:
	// "" (none) or "calc" (the calculator of package engine/chat).
	Tools string `json:"tools,omitempty"`
	// Draft names a draft model (a model file name of the same tokenizer):
	// the run decodes speculatively, the draft proposing DraftK tokens a
	// round and the model verifying them in one pass. Empty: plain.
	Draft  string `json:"draft,omitempty"`
	DraftK int    `json:"draft_k,omitempty"`
	// Ablate is the run's interventions, read once where they arrive (a
	// link, a form, a lesson, JSON: their written form, package
	// intervene's "L1H2;L3mlp*0.5"): every pass of the run, the prompt's
	// too, computes with those heads, units or sublayers switched off or
	// scaled. Nil: the model as it is.
	Ablate *intervene.Set `json:"ablate,omitempty"`
	// Steer is the run's steering, read once where it arrives (written
	// L2:happy day|sad night*4): after that layer, at every position, the
	// strength times the difference of the two texts' mean residual
	// streams is added. Nil: none.
	Steer *intervene.Steer `json:"steer,omitempty"`
	// MeanOver makes Ablate's switched-off heads and units (those written
	// without a factor) mean ablations: each is replaced by its mean over
	// every position of this reference text instead of by zero, which
	// removes what it reads from the prompt but keeps what it adds on
	// average. Empty: switched off to zero.
	MeanOver string `json:"mean_over,omitempty"`
	View     View   `json:"view"`
}

// MaxMeanOverChars bounds a mean ablation's reference text.
const MaxMeanOverChars = 1000

// ToolNames are the allowed Tools values.
var ToolNames = []string{"", "calc"}

// View is where a viewer stands in a run's trace and how it is drawn.
type View struct {
	Token int `json:"token"` // token step: 0 is the prompt's own step
	Stage int `json:"stage"` // stage index within the token step
	// StageName and Layer name a stage instead (lessons): the first stage
	// of that name (in that layer, when Layer >= 0) wins over Stage.
	StageName string `json:"stage_name,omitempty"`
	Layer     int    `json:"layer,omitempty"`
	Filter    int    `json:"filter,omitempty"` // the sampler step, 1-based; 0: the first
	Head      int    `json:"head,omitempty"`   // attention head shown, 0-based
	Scores    bool   `json:"scores,omitempty"`
	// Temperature is the softmax slider's value; 0: the sampler's.
	Temperature float64 `json:"view_temperature,omitempty"`
	// TopP is the softmax panel's top-p slider: where it cuts the
	// nucleus; 0: the sampler's top-p.
	TopP float64 `json:"view_top_p,omitempty"`
	// Vs is a weight type (Q4_0, Q8_0, …) whose values the view shows
	// beside the run's at every stage: the same tokens through the model
	// converted to it (NAME@TYPE); "" shows none.
	Vs string `json:"vs,omitempty"`
}

// MaxVsChars bounds a view's Vs: the longest type name is six.
const MaxVsChars = 8

// VsName normalises a written type to compare with: upper case, "none"
// and the empty box meaning none.
func VsName(v string) string {
	v = strings.ToUpper(strings.TrimSpace(v))
	if v == "NONE" {
		return ""
	}
	return v
}

// Default is the run a new Explorer starts from: llama.cpp's sampler
// defaults, a fresh seed and 32 new tokens.
func Default(model string) Run {
	return Run{Version: Version, Model: model, Backend: "auto", Sampler: sample.Defaults(), MaxTokens: 32, View: View{Layer: -1}}
}

// Error is an invalid parameter: its name, the value given and what is
// allowed (the sampler's type: one parameter error in the engine).
type Error = sample.ParamError

// CheckPrompt refuses a prompt longer than MaxPromptChars characters
// (counted without allocating; a byte that is not UTF-8 counts as one).
func CheckPrompt(p string) error {
	if len(p) <= MaxPromptChars {
		return nil
	}
	if n := utf8.RuneCountInString(p); n > MaxPromptChars {
		return &Error{Param: "prompt", Value: "", Allowed: fmt.Sprintf("%d characters; the limit is %d", n, MaxPromptChars)}
	}
	return nil
}

// Validate reports the first invalid field of r.
func (r *Run) Validate() error {
	if err := r.validate(); err != nil {
		return err
	}
	return r.Sampler.Validate()
}

// validate is Validate but for the sampler.
func (r *Run) validate() error {
	switch {
	case CheckPrompt(r.Prompt) != nil:
		return CheckPrompt(r.Prompt)
	case !utf8.ValidString(r.Prompt):
		return &Error{Param: "prompt", Value: "", Allowed: "not valid UTF-8"}
	case len(r.Model) > 255 || !utf8.ValidString(r.Model):
		return &Error{Param: "model", Value: "", Allowed: "not a model file name"}
	case !slices.Contains(Backends, r.Backend):
		return &Error{Param: "backend", Value: r.Backend, Allowed: "choose auto, cpu or vulkan"}
	case !slices.Contains(ToolNames, r.Tools):
		return &Error{Param: "tools", Value: r.Tools, Allowed: "choose calc or none"}
	case len(r.Draft) > 255 || !utf8.ValidString(r.Draft):
		return &Error{Param: "draft", Value: "", Allowed: "not a model file name"}
	case r.Draft != "" && (r.DraftK < 1 || r.DraftK > MaxDraftK):
		return &Error{Param: "draft k", Value: fmt.Sprint(r.DraftK), Allowed: fmt.Sprintf("choose 1 to %d", MaxDraftK)}
	case r.Steer != nil && r.Draft != "":
		return &Error{Param: "steer", Value: r.Steer.String(), Allowed: "steering runs without a draft: choose one"}
	case len(r.MeanOver) > MaxMeanOverChars || !utf8.ValidString(r.MeanOver):
		return &Error{Param: "mean over", Value: "", Allowed: fmt.Sprintf("a text of at most %d bytes", MaxMeanOverChars)}
	case r.Ablate != nil && len(r.Ablate.Edits) > intervene.MaxEdits:
		return &Error{Param: "ablate", Value: "", Allowed: fmt.Sprintf("at most %d edits", intervene.MaxEdits)}
	case r.Ablate != nil && r.Draft != "":
		return &Error{Param: "ablate", Value: r.Ablate.String(), Allowed: "interventions run without a draft: choose one"}
	case r.Draft != "" && r.Tools != "":
		return &Error{Param: "draft", Value: r.Draft, Allowed: "speculative decoding runs without tools: choose one"}
	case r.MaxTokens < 1 || r.MaxTokens > MaxNewTokens:
		return &Error{Param: "max tokens", Value: fmt.Sprint(r.MaxTokens), Allowed: fmt.Sprintf("choose 1 to %d", MaxNewTokens)}
	case r.View.Token < 0 || r.View.Token > MaxTokenStep:
		return &Error{Param: "token", Value: fmt.Sprint(r.View.Token + 1), Allowed: fmt.Sprintf("a token step from 1 to %d", MaxTokenStep+1)}
	case r.View.Stage < 0 || r.View.Stage > 1<<16:
		return &Error{Param: "stage", Value: fmt.Sprint(r.View.Stage), Allowed: "a stage index from 0"}
	case r.View.Head < 0 || r.View.Head > 1<<16:
		return &Error{Param: "head", Value: fmt.Sprint(r.View.Head), Allowed: "a head index from 0"}
	case r.View.Filter < 0 || r.View.Filter > 64:
		return &Error{Param: "filter", Value: fmt.Sprint(r.View.Filter), Allowed: "a sampler step from 1"}
	case r.View.Layer < -1 || r.View.Layer > 1<<16:
		return &Error{Param: "layer", Value: fmt.Sprint(r.View.Layer), Allowed: "a layer from 1"}
	case len(r.View.Vs) > MaxVsChars || strings.Trim(r.View.Vs, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "":
		return &Error{Param: "vs", Value: strconv.Quote(r.View.Vs), Allowed: "a weight type such as Q8_0 or Q4_0"}
	case r.View.Vs != "" && r.Draft != "":
		return &Error{Param: "vs", Value: r.View.Vs, Allowed: "comparing with a weight type runs without a draft: choose one"}
	}
	return checkSliders(r.View)
}

// Checked is Validate returning the run's interventions, for the caller
// that runs them.
func (r *Run) Checked() (Interventions, error) {
	if err := r.Validate(); err != nil {
		return Interventions{}, err
	}
	return r.Interventions(), nil
}

// Interventions are a run's edits (Ablate, read) and the sources of their
// vectors (MeanOver, and Steer read), as engine.ResolveEdits takes them.
type Interventions struct {
	Edits   *intervene.Set
	Sources engine.EditSources
}

// Interventions are the run's edits (nil for none) and the sources of
// their vectors.
func (r *Run) Interventions() Interventions {
	var set *intervene.Set
	if r.Ablate != nil && len(r.Ablate.Edits) > 0 {
		set = r.Ablate
	}
	return Interventions{Edits: set, Sources: engine.EditSources{MeanOver: r.MeanOver, Steer: r.Steer}}
}

// Check refuses interventions a model of shape sh cannot take, naming the
// setting: an edit of a layer, head or unit it lacks (ablate), a steering
// after a layer it lacks (steer).
func (iv Interventions) Check(sh intervene.Shape) error {
	if err := iv.Edits.Check(sh); err != nil {
		return &Error{Param: "ablate", Value: "", Allowed: err.Error()}
	}
	if st := iv.Sources.Steer; st != nil && (st.Layer < 0 || st.Layer >= sh.Layers) {
		return &Error{Param: "steer", Value: "", Allowed: fmt.Sprintf("steering after layer %d: the model has layers 1 to %d", st.Layer+1, sh.Layers)}
	}
	return nil
}

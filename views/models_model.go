package views

import "github.com/a-h/templ"

// ModelsPage is the Models page: the models offered, the pull form and
// the pull under way (if any).
type ModelsPage struct {
	Rows        []ModelRow
	Suggestions []ModelSuggestion
	Pull        *PullStatus // the pull this page follows; nil: none
	Ref         string      // the pull form's value
	CanPull     bool        // the server has a Hub client (a cache to pull into)
	NeedKey     bool        // pulling and deleting ask for the API key first
	Cache       string      // the Hugging Face cache's folder
	Memory      string      // the machine's memory, for the suggestions' choice
	Error       string
	Notice      string
}

// ModelRow is one offered model.
type ModelRow struct {
	Name, Family, Params, Type, Size, Memory, MemoryWorking string
	Source, Where                                           string // "embedded", "models folder", "Hugging Face cache"; its path
	Deletable                                               bool   // in the Hugging Face cache: the page may delete it
}

// ModelSuggestion is a small model to pull, with the quantization that
// fits this machine.
type ModelSuggestion struct {
	Ref, Title, Why string
}

// PullStatus is a pull as the page shows it.
type PullStatus struct {
	Ref         string
	State       string // "running", "done", "failed", "cancelled"
	Done, Total int64
	Text        string // bytes, rate, time left; or the outcome
	Name        string // done: the name the model is offered by
	Announce    string // the sentence the live region says (state changes only)
}

// Running reports whether the pull is still going.
func (p PullStatus) Running() bool { return p.State == "running" }

// oobAttr is hx-swap-oob's value: "true" out of band, else none.
func oobAttr(oob bool) string {
	if oob {
		return "true"
	}
	return ""
}

// pollAttrs make a running pull's progress ask for itself again every
// half second (htmx), replacing only itself.
func pollAttrs(s PullStatus) templ.Attributes {
	if !s.Running() {
		return nil
	}
	return templ.Attributes{"hx-get": "/models/pull/status?ref=" + s.Ref, "hx-trigger": "every 500ms", "hx-swap": "outerHTML"}
}

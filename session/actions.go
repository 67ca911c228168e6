package session

import "slices"

// The Explorer's actions, as its WebSocket messages name them: what Do
// takes. The softmax panel's what-if sliders change only what the panel
// shows (the view's temperature and top-p), never the run's sampler
// settings, hence their own names.
const (
	ActionRun               = "run"
	ActionStep              = "step"
	ActionBack              = "back"
	ActionNextToken         = "next-token"
	ActionEnd               = "end"
	ActionReset             = "reset"
	ActionWhatIfTemperature = "whatif-temperature"
	ActionWhatIfTopP        = "whatif-top-p"
	ActionView              = "view"
	ActionGoto              = "goto"
	ActionAblate            = "ablate"
	ActionVs                = "vs" // show the values under another weight type beside the run's
)

// ExplorerActions lists every action Do takes: the allow-lists of the
// Explorer's socket and of a room's sides are made from it.
var ExplorerActions = []string{ActionRun, ActionStep, ActionBack, ActionNextToken, ActionEnd, ActionReset,
	ActionWhatIfTemperature, ActionWhatIfTopP, ActionView, ActionGoto, ActionAblate, ActionVs}

// computing are the actions that may run the engine (a run, a decode past
// the trace, an edit's rerun).
var computing = []string{ActionRun, ActionStep, ActionNextToken, ActionEnd, ActionGoto, ActionAblate, ActionVs}

// Computing reports whether an action may run the engine: the Explorer's
// socket gives each such one a work slot while it does.
func Computing(action string) bool { return slices.Contains(computing, action) }

// ActionSet is ExplorerActions, without those in except, and the extra
// actions more, as an allow-list.
func ActionSet(except []string, more ...string) map[string]bool {
	set := make(map[string]bool, len(ExplorerActions)+len(more))
	for _, a := range ExplorerActions {
		set[a] = true
	}
	for _, a := range except {
		delete(set, a)
	}
	for _, a := range more {
		set[a] = true
	}
	return set
}

package session

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
)

// ExplorerActions lists every action Do takes: the allow-lists of the
// Explorer's socket and of a room's sides are made from it.
var ExplorerActions = []string{ActionRun, ActionStep, ActionBack, ActionNextToken, ActionEnd, ActionReset,
	ActionWhatIfTemperature, ActionWhatIfTopP, ActionView, ActionGoto, ActionAblate}

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

package views

// ServingPage is the serving floor: a form for a load, the recent runs,
// and one run (live while it runs, measured when done).
type ServingPage struct {
	Models   []string
	Form     ServingForm
	Error    string
	Runs     []ServingLink
	Run      *ServingRun
	Sweep    *ServingSweep
	SweepURL string
}

// ServingForm holds the form's values as typed.
type ServingForm struct {
	Model, Users, Rate, PromptTokens, MaxTokens, MinTokens, MaxSeqs string
	Policy, Cache, Chunked                                          string // the setting
	Compare                                                         string // "", or a second setting "policy,cache,chunked"
	Shared                                                          string // tokens of a system prompt every user's prompt starts with
	Temperature, Stop, IgnoreEOS                                    string // IgnoreEOS: "on" when every reply runs to its length
}

// ServingLink is a recent run.
type ServingLink struct{ ID, Title, URL, Status string }

// ServingRun is one load run under one or two settings.
type ServingRun struct {
	ID, Title, Load, Hardware string
	Done                      bool
	Error                     string
	EventsURL                 string
	Users                     []ServingUser // the users, in arrival order
	KVPositions               int
	MaxKV                     int             // the most positions one user can hold (its prompt and longest reply)
	Results                   []ServingResult // one per setting finished
	Settings                  []string        // every setting's name, in run order
	Verdict                   string          // with two settings: what the numbers say
	Repeats                   ServingRepeats  // every setting's figures over repeated runs
	Round                     string          // while measuring again: which round
}

// ServingRepeats are the figures of repeated runs: per figure, per
// setting, the median and the lowest and highest run.
type ServingRepeats struct {
	Runs     int
	Settings []string
	Rows     []RepeatRow
}

// RepeatRow is one figure across the settings.
type RepeatRow struct {
	Name   string
	Values []string // "median (lowest–highest)", one per setting
}

// ServingUser is one simulated user.
type ServingUser struct {
	N            int
	PromptTokens int
	MaxTokens    int
	Texts        []string // the streamed reply under each setting
	Finish       []string
}

// ServingResult is one setting's measured figures and pictures.
type ServingResult struct {
	Name     string
	Figures  []Metric
	Timeline Chart // each user: queued, reading its prompt, generating
	Steps    Chart // each step: its tokens, prompt vs decode, over time
	Latency  Chart // TTFT and TPOT of every user
}

// ServingSweep is the prompt-length sweep: measured prefill time against
// prompt length, with the least-squares line.
type ServingSweep struct {
	Model    string
	Points   []Metric // "n tokens" → "ms"
	Slope    string   // ms per token
	Fit      string
	Chart    Chart
	Measured string
}

// Chart is a drawing computed on the server from measured data: shapes in
// a W×H box (CSS classes give the colours).
type Chart struct {
	W, H   int
	Title  string // the accessible name
	Rects  []ChartRect
	Lines  []ChartLine
	Labels []ChartLabel
}

// ChartRect is a bar; Tip is its hover title.
type ChartRect struct {
	X, Y, W, H float64
	Class, Tip string
}

// ChartLine is a segment.
type ChartLine struct {
	X1, Y1, X2, Y2 float64
	Class          string
}

// ChartLabel is a text; Anchor is start, middle or end.
type ChartLabel struct {
	X, Y         float64
	Text, Anchor string
	Class        string
}

// HonestPage is "Measuring honestly": a real loadgen run and what a
// benchmark must report, pointed out in that output.
type HonestPage struct {
	Model, Command, Output string
	Error                  string
	Checklist              []HonestItem
}

// HonestItem is one thing a benchmark must report.
type HonestItem struct{ What, Where, Why string }

package views

// ComparePage is the Compare page.
type ComparePage struct {
	PromptMax int // the prompt's limit in characters (spec's)
	Models    []string
	Prompt    string
	Model     string
	N         string
	Seed      string
	LaneSpecs []string // six inputs; empty ones are unused
	Error     string
	Result    *CompareView
}

// CompareView is a computed comparison at a step.
type CompareView struct {
	Step, Steps                   int
	Divergence                    int // -1: never
	URL, Prev, Next, End, First   string
	JSONURL, CSVURL               string
	PrefillMS, CopyMS, SeparateMS float64
	SavedMS                       float64
	Lanes                         []LaneView
	MeasuredAt                    string // when the times were measured (a step through the comparison shows the same run)
	AgainURL                      string // the same comparison, run and measured afresh
}

// LaneView is one lane up to the current step.
type LaneView struct {
	Index   int
	Spec    string
	Title   string // the lane in words (a what-if branch says what it forces)
	Seed    string
	Tokens  []LaneToken
	Current *LaneStepView
	Text    string
	Metrics []Metric
	Beam    *BeamTree
}

// LaneToken is a generated token in the aligned row.
type LaneToken struct {
	Step     int
	ID       int32
	Piece    string
	Diverged bool
	Forced   bool
	Current  bool
}

// LaneStepView is what the lane did at the current step.
type LaneStepView struct {
	Greedy, Forced bool
	Round          bool // emitted by a speculative round (no single draw)
	U              float64
	Chosen         int32
	ChosenPiece    string
	Top            []Bar  // the distribution Dist names
	Dist           string // which distribution Top is (its column's header)
}

// Metric is a named per-lane figure.
type Metric struct {
	Name, Value string
}

// BeamTree draws beam search up to the current step.
type BeamTree struct {
	Nodes  []BeamNode
	Edges  []BeamEdge
	Pruned []string // per step: how many candidates were pruned, and the best of them
	Best   string
	Why    string
	Width  int
	Height int
}

// BeamNode is a kept hypothesis at a step.
type BeamNode struct {
	X, Y    int
	Label   string
	LogProb float64
	Done    bool
	Best    bool // on the chosen hypothesis's path
}

// BeamEdge links a hypothesis to its parent.
type BeamEdge struct {
	X1, Y1, X2, Y2 int
	Best           bool // on the chosen hypothesis's path
}

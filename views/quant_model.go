package views

// QuantPage compares one model at several precisions on one prompt.
type QuantPage struct {
	Models, AllTypes             []string
	Model, Prompt, N             string
	Selected                     map[string]bool
	Error                        string
	Rows                         []QuantRow
	KVBytesPerToken              int
	Step, Steps                  int
	Prev, Next                   string // links to the neighbouring steps
	Reference                    []string
	StepRows                     []QuantStepRow
	TensorType                   string
	Tensors                      []QuantTensor
	TensorLinks                  []QuantLink
	HistName                     string
	HistBefore, HistAfter        []float64 // bar heights 0..1
	HistMin, HistMax, HistBlockN float64
	Drift                        QuantDrift // inside the model: the prompt's drift by layer
}

// QuantRow is one precision over the generation.
type QuantRow struct {
	Type                string
	MiB                 float64
	Text                string // its own greedy continuation
	Divergence          int    // -1 never
	MeanKL, FlipRate    float64
	PrefillMS, DecodeMS float64
	PrefillRange        [2]float64 // the fastest and slowest of the runs
	DecodeRange         [2]float64
	Ratio               float64 // bytes against the reference's
}

// QuantStepRow is one precision at the current step.
type QuantStepRow struct {
	Type    string
	Top     []Bar
	KL      float64
	Flipped bool
	Overlap int
}

// QuantTensor is one weight matrix's conversion.
type QuantTensor struct {
	Name, From, To string
	RMSE           float64
}

// QuantLink is a link to the page with another precision's weights.
type QuantLink struct{ Type, URL string }

package views

// QuantDrift is the quantization page's "inside the model" section: for
// each compared precision, how far the residual stream strays from the
// model as stored, layer by layer, over the prompt's positions.
type QuantDrift struct {
	Tokens  int // the prompt positions read
	Chart   Chart
	Rows    []QuantDriftRow // the chart's data, one row per precision and layer
	Lens    []string        // per precision, where the logit lens first disagrees, in words
	Fragile []QuantFragile  // per precision, the heads whose patterns moved most
	Note    string          // why the section was not measured (the work budget), instead of all above
}

// QuantDriftRow is one precision at one layer: the relative error after
// attention and after the MLP (least, median, largest over positions),
// the mean cosine after the MLP, and the positions where the logit lens's
// top token agrees.
type QuantDriftRow struct {
	Type                 string
	Layer                int // 1-based
	Attn, MLP            [3]float64
	Cosine               float64
	LensAgree, Positions int
}

// QuantFragile is a precision's most fragile heads, the most moved first.
type QuantFragile struct {
	Type  string
	Heads []QuantHeadJS
}

// QuantHeadJS is one head's pattern change: the Jensen–Shannon divergence
// of its rows in bits, mean and largest over positions.
type QuantHeadJS struct {
	Head          string
	JSMean, JSMax float64
}

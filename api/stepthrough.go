package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Stepthrough is the request's extension object, "stepthrough": what the
// model computes inside, asked for per generated token, and the
// interventions the request runs with (docs/API.md). A request without
// it has none (nil) and costs nothing more.
type Stepthrough struct {
	LensTop   int   // logit_lens.top_k (0: no lens)
	Layers    []int // attention.layers (nil: no attention)
	Heads     []int // attention.heads
	Norms     bool  // residual_norms
	TraceURL  bool  // trace_url
	Ablate    string
	Steer     string
	MeanOver  string
	Attention bool // attention was asked for
}

// Bounds on the extension, checked before anything is computed: the lens
// lists at most MaxLensTop tokens per layer (OpenAI's top_logprobs
// bound), attention names at most MaxProbeList layers and heads, the
// written interventions at most MaxProbeText bytes each, and one
// response holds at most MaxProbeValues numbers of internals.
const (
	MaxLensTop     = 20
	MaxProbeList   = 256
	MaxProbeText   = 4096
	MaxProbeValues = 2_000_000
)

// stepthroughKeys are the extension's fields; any other is refused.
var stepthroughKeys = []string{"logit_lens", "attention", "residual_norms", "ablate", "steer", "mean_over", "trace_url"}

// stepthrough reads the extension object (absent or null: none).
func (r *Request) stepthrough(w wire, _ Limits) *Error {
	raw := bytes.TrimSpace(w.Stepthrough)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := strictJSON(raw, &fields); err != nil || fields == nil {
		return invalid("stepthrough", "stepthrough must be an object with some of the fields %s", strings.Join(stepthroughKeys, ", "))
	}
	st := &Stepthrough{}
	for k, v := range fields {
		if !slices.Contains(stepthroughKeys, k) {
			return invalid("stepthrough."+k, "stepthrough has no field %q (its fields: %s)", k, strings.Join(stepthroughKeys, ", "))
		}
		if e := st.field(k, v); e != nil {
			return e
		}
	}
	if st.LensTop == 0 && !st.Attention && !st.Norms && !st.TraceURL && st.Ablate == "" && st.Steer == "" && st.MeanOver == "" {
		return invalid("stepthrough", "stepthrough asks for nothing: give logit_lens, attention, residual_norms, trace_url or an intervention (ablate, steer, mean_over), or leave it out")
	}
	if st.MeanOver != "" && st.Ablate == "" {
		return invalid("stepthrough.mean_over", "mean_over makes ablate's switched-off heads and units take their mean over a text: it needs ablate")
	}
	r.Stepthrough = st
	return nil
}

// field reads one field of the extension.
func (st *Stepthrough) field(k string, v json.RawMessage) *Error {
	param := "stepthrough." + k
	switch k {
	case "logit_lens":
		return st.lens(v)
	case "attention":
		return st.attention(v)
	case "residual_norms":
		return jsonBool(param, v, &st.Norms)
	case "trace_url":
		return jsonBool(param, v, &st.TraceURL)
	case "ablate":
		return jsonText(param, v, &st.Ablate)
	case "steer":
		return jsonText(param, v, &st.Steer)
	case "mean_over":
		return jsonText(param, v, &st.MeanOver)
	}
	return nil
}

func (st *Stepthrough) lens(v json.RawMessage) *Error {
	var l struct {
		TopK *json.RawMessage `json:"top_k"`
	}
	if strictJSON(v, &l) != nil || l.TopK == nil {
		return invalid("stepthrough.logit_lens", `logit_lens is an object {"top_k": K}, K from 1 to %d`, MaxLensTop)
	}
	var k int
	if json.Unmarshal(*l.TopK, &k) != nil || k < 1 || k > MaxLensTop {
		return invalid("stepthrough.logit_lens.top_k", "top_k %s: a whole number from 1 to %d", clip(*l.TopK), MaxLensTop)
	}
	st.LensTop = k
	return nil
}

func (st *Stepthrough) attention(v json.RawMessage) *Error {
	var a struct {
		Layers json.RawMessage `json:"layers"`
		Heads  json.RawMessage `json:"heads"`
	}
	if strictJSON(v, &a) != nil || a.Layers == nil || a.Heads == nil {
		return invalid("stepthrough.attention", `attention is an object {"layers": [...], "heads": [...]}, indices from 0`)
	}
	var e *Error
	if st.Layers, e = indexList("stepthrough.attention.layers", a.Layers); e != nil {
		return e
	}
	if st.Heads, e = indexList("stepthrough.attention.heads", a.Heads); e != nil {
		return e
	}
	st.Attention = true
	return nil
}

// indexList reads a non-empty list of distinct indices from 0, at most
// MaxProbeList of them (counted before they are kept).
func indexList(param string, v json.RawMessage) ([]int, *Error) {
	var raw []json.RawMessage
	if json.Unmarshal(v, &raw) != nil || len(raw) == 0 {
		return nil, invalid(param, "%s must be a non-empty array of indices from 0", param)
	}
	if len(raw) > MaxProbeList {
		return nil, invalid(param, "%s lists %d indices; the limit is %d", param, len(raw), MaxProbeList)
	}
	out := make([]int, 0, len(raw))
	for i, x := range raw {
		var n int
		if json.Unmarshal(x, &n) != nil || n < 0 {
			return nil, invalid(fmt.Sprintf("%s[%d]", param, i), "%s[%d] is %s: an index is a whole number from 0", param, i, clip(x))
		}
		if slices.Contains(out, n) {
			return nil, invalid(fmt.Sprintf("%s[%d]", param, i), "%s lists %d twice", param, n)
		}
		out = append(out, n)
	}
	return out, nil
}

func jsonBool(param string, v json.RawMessage, dst *bool) *Error {
	if json.Unmarshal(v, dst) != nil {
		return invalid(param, "%s is true or false, not %s", param, clip(v))
	}
	return nil
}

func jsonText(param string, v json.RawMessage, dst *string) *Error {
	if json.Unmarshal(v, dst) != nil {
		return invalid(param, "%s is a string, not %s", param, clip(v))
	}
	if len(*dst) > MaxProbeText {
		return invalid(param, "%s is %d bytes; the limit is %d", param, len(*dst), MaxProbeText)
	}
	return nil
}

// strictJSON decodes one JSON object into v, refusing fields v lacks.
func strictJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("more than one value")
	}
	return nil
}

// clip is a value as the client wrote it, cut short for a message.
func clip(b []byte) string {
	s := string(bytes.TrimSpace(b))
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// Shape is what the extension is checked against once the model is
// known: its layers and heads, the prompt's tokens, the tokens each
// choice may generate and the choices.
type Shape struct {
	Layers, Heads, Prompt, MaxTokens, N int
}

// Check refuses indices outside the model and a request whose internals
// would exceed MaxProbeValues numbers (computed from the request, before
// anything runs), naming the part that weighs most.
func (st *Stepthrough) Check(s Shape) *Error {
	for _, c := range []struct {
		param string
		list  []int
		n     int
		what  string
	}{{"stepthrough.attention.layers", st.Layers, s.Layers, "layers"}, {"stepthrough.attention.heads", st.Heads, s.Heads, "heads"}} {
		for i, x := range c.list {
			if x >= c.n {
				return invalid(fmt.Sprintf("%s[%d]", c.param, i), "%s[%d] is %d: the model has %d %s (0 to %d)", c.param, i, x, c.n, c.what, c.n-1)
			}
		}
	}
	parts := st.parts(s)
	var total int64
	top := parts[0]
	for _, p := range parts {
		total += p.n
		if p.n > top.n {
			top = p
		}
	}
	if total <= MaxProbeValues {
		return nil
	}
	return &Error{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: str(top.param), Code: str("stepthrough_too_large"),
		Message: fmt.Sprintf("The internals asked for would be %d numbers, over the limit of %d per response (%s): ask for fewer layers, heads or tokens (max_tokens, n)", total, MaxProbeValues, top.how)}
}

// Values is how many numbers of internals a request of shape s returns
// at most.
func (st *Stepthrough) Values(s Shape) int64 {
	var n int64
	for _, p := range st.parts(s) {
		n += p.n
	}
	return n
}

// probePart is one part of the internals' size.
type probePart struct {
	param string
	n     int64
	how   string
}

// parts are the internals' parts at most, by field: each lens entry is
// two numbers (id, p), each attention row covers at most the prompt and
// every generated token.
func (st *Stepthrough) parts(s Shape) []probePart {
	tokens := int64(s.MaxTokens) * int64(s.N)
	return []probePart{
		{"stepthrough.logit_lens", 2 * int64(st.LensTop) * int64(s.Layers) * tokens, fmt.Sprintf("logit_lens: 2 × top_k %d × %d layers × %d tokens", st.LensTop, s.Layers, tokens)},
		{"stepthrough.attention", int64(len(st.Layers)) * int64(len(st.Heads)) * int64(s.Prompt+s.MaxTokens) * tokens, fmt.Sprintf("attention: %d layers × %d heads × %d positions × %d tokens", len(st.Layers), len(st.Heads), s.Prompt+s.MaxTokens, tokens)},
		{"stepthrough.residual_norms", b2i(st.Norms) * int64(s.Layers) * tokens, fmt.Sprintf("residual_norms: %d layers × %d tokens", s.Layers, tokens)},
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Internals are a choice's internals, or a streamed chunk's: one entry
// per generated token, in order (choices[i].stepthrough.tokens[j]).
type Internals struct {
	Tokens []TokenInternals `json:"tokens"`
}

// internals wraps a choice's or a delta's tokens (nil for none: the
// field is then left out).
func internals(t []TokenInternals) *Internals {
	if len(t) == 0 {
		return nil
	}
	return &Internals{Tokens: t}
}

// TokenInternals is one generated token and what the forward pass that
// produced it computed at the position it was predicted from (the last
// input position): the pass the Explorer shows as that token's step.
type TokenInternals struct {
	Index    int    `json:"index"`    // the token's place among the choice's generated tokens, from 0
	ID       int32  `json:"id"`       // the token generated
	Text     string `json:"text"`     // as displayed (a control token by its name)
	Position int    `json:"position"` // the position it was predicted from, from 0
	TraceURL string `json:"trace_url,omitempty"`
	// LogitLens is each layer's lens (from layer 0; the last is the
	// model's own output).
	LogitLens []LensLayer `json:"logit_lens,omitempty"`
	// Attention is each asked (layer, head)'s weights over positions 0
	// to Position (they sum to 1), layers in the order asked, heads
	// within each.
	Attention []HeadWeights `json:"attention,omitempty"`
	// ResidualNorms is the residual stream's L2 norm after each layer.
	ResidualNorms []float32 `json:"residual_norms,omitempty"`
}

// LensLayer is one layer's logit lens: the final norm and output matrix
// applied to the residual stream after it.
type LensLayer struct {
	Layer int         `json:"layer"` // from 0
	Top   []LensToken `json:"top"`   // the likeliest tokens, p at temperature 1
	// FinalRank is where the last layer's likeliest token (the model's
	// own prediction) ranks under this layer's lens, from 1.
	FinalRank int `json:"final_rank"`
}

// LensToken is a token under a layer's lens.
type LensToken struct {
	ID   int32   `json:"id"`
	Text string  `json:"text"`
	P    float32 `json:"p"`
}

// HeadWeights are one head's attention weights for a query row.
type HeadWeights struct {
	Layer   int       `json:"layer"`
	Head    int       `json:"head"`
	Weights []float32 `json:"weights"`
}

// PerToken reports whether the extension asks for anything per token
// (interventions alone change the run and add nothing to the response).
func (st *Stepthrough) PerToken() bool {
	return st != nil && (st.LensTop > 0 || st.Attention || st.Norms || st.TraceURL)
}

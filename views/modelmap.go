package views

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// ModelMap is the overview of the model as it is loaded, drawn from its
// real shape: the token ids, the embedding, every layer's attention and
// MLP on the residual stream, the final norm, logits, softmax, each
// sampler filter, the draw and the KV cache. The session fills it from
// the model's configuration and the current trace step.
type ModelMap struct {
	Arch                                       string
	Layers, Embd, FFN, Heads, KVHeads, HeadDim int
	Vocab                                      int
	PosEmbed                                   bool   // learned position embeddings (GPT-2)
	Norm, MLPKind                              string // "RMSNorm"/"LayerNorm"; the MLP's formula
	// Family lists how this model's pass differs from llama's, each with
	// why it is there (the map's hover); Local marks the layers that
	// attend through a sliding Window; Score is how a score is formed
	// ("q·k/√d", a different scale, a soft cap).
	Family      []MapFeature
	Local       []bool
	Window      int
	Score       string
	Tokens      int    // positions this step's pass computes
	Cached      int    // positions in the cache after this step
	KVBytes     int    // the cache's bytes in use after this step
	Temperature string // the sampler's, as the form shows it
	Filters     []MapFilter
	Present     map[string]int  // the stage keys this step has (see mapKey), with their ranks along the pipeline
	Where       string          // where the viewer is, in words, for the collapsed map
	Off         map[string]bool // the stage keys an intervention edits (see mapKey)
	Drift       map[string]int  // the stage keys the residual stream has drifted after under another type, by DriftLevel
	Here        Stage
	Prev        Stage // the stage before Here in this step (for the flow)
	HasPrev     bool
	// Key names the drawing: the same for every step of a run, so a page
	// that has it gets only the state (MapStateView) as it steps.
	Key string
}

// MapFeature is one way the family differs from llama.
type MapFeature struct{ Key, Name, Why string }

// MapFilter is one sampler step as the map shows it.
type MapFilter struct {
	Name, Setting string
	In, Out       int
	Skipped       bool
}

// MapPart is one clickable part of the drawing.
type MapPart struct {
	Key            string // e.g. "attention-3", "sampler-2": the data-testid is "map-"+Key
	Label, Title   string // Title "": a layer's part, its hover from the layout's template
	Short          string // its accessible name
	X, Y, W, H     float64
	Stage          string // the stage it opens; "" when it opens none
	Layer, Filter  int    // 1-based where they apply, else 0
	Here, Done     bool
	Absent, Inline bool   // Absent: not in this step; Inline: label drawn inside
	Local          bool   // a sliding-window attention layer
	Off            bool   // an intervention switches (part of) it off or scales it
	Drift          int    // DriftLevel of the stream after it under another type (0: none shown)
	Tag            string // a name slanted above the part (a sampler filter's)
}

// MapEdge is a connection, with the shape of the data on it.
type MapEdge struct {
	X1, Y1, X2, Y2 float64
	Label          string
	LX, LY         float64
	Dashed         bool
	Anchor         string // the label's text-anchor ("": middle)
}

// TextAnchor is the label's SVG text-anchor.
func (e MapEdge) TextAnchor() string {
	if e.Anchor == "" {
		return "middle"
	}
	return e.Anchor
}

// ViewBox is the drawing's viewBox: its width and height, and room above
// y 0 for the top line's ascent.
func (L MapLayout) ViewBox() string {
	return fmt.Sprintf("0 %.0f %.0f %.0f", -mapTop, L.W, L.H+mapTop)
}

// MapLayout is the drawing: parts, edges, free labels and the flow path
// from the previous stage to the current one.
type MapLayout struct {
	W, H   float64
	Parts  []MapPart
	Edges  []MapEdge
	Texts  []MapEdge // labels only (X1, Y1 is the anchor)
	Joins  []MapEdge // ⊕ where a block adds to the stream (X1, Y1)
	Under  []MapEdge // drawn beneath the stream (the KV cache's links)
	Flow   string    // SVG path data; "" when there is none
	Loop   string    // SVG path: the drawn token back to the input
	Where  string    // "layer 2 · attention" for the phone summary
	Stream MapEdge
	// AttnTitle and MLPTitle are the hover sentences of every layer's
	// attention and MLP, "{L}" standing for the layer (the page fills it).
	AttnTitle, MLPTitle string
	// nums are the step's numbers the drawing's texts name in braces
	// ({T} tokens this step, {C} positions cached, {B} cache bytes, {I3}
	// and {O3} sampler step 3's candidates in and out, {H3} its slice's
	// height): the drawing is the run's, the numbers the step's.
	nums map[string]string
}

const (
	mapW       = 1200.0
	mapH       = 186.0
	streamY    = 100.0
	boxY, boxH = 80.0, 40.0 // the parts on the stream's line
	blkY, blkH = 33.0, 36.0 // attention and MLP, above the stream
	kvY, kvH   = 138.0, 28.0
	loopY      = 180.0
	mapTop     = 6.0 // drawn above y 0: the title's ascent
	blockX0    = 262.0
	blockX1    = 735.0
)

// Layout places the parts for this model's shape: every layer gets an
// equal share of the block region, so 4 or 32 layers fill it alike.
func (m *ModelMap) Layout() MapLayout {
	L := MapLayout{W: mapW, H: mapH, nums: m.nums()}
	L.add(m, MapPart{Key: "tokenize", Label: "tokens", X: 8, Y: boxY, W: 80, H: boxH, Stage: "tokenize", Inline: true,
		Title: fmt.Sprintf("Tokenize: the text becomes token ids from a vocabulary of %d; this step feeds {T} of them to the model.", m.Vocab)})
	embTitle := fmt.Sprintf("Embed: each id selects its row of the %d × %d embedding table, giving [{T} × %d].", m.Vocab, m.Embd, m.Embd)
	if m.PosEmbed {
		embTitle += " The learned position row is added to it."
	}
	L.add(m, MapPart{Key: "embed", Label: "embed", X: 108, Y: boxY, W: 80, H: boxH, Stage: "embed", Inline: true, Title: embTitle})
	// the labels start clear of what they sit beside: the loop's line down
	// from the tokens (x 48) and the embed box (to x 188)
	L.Edges = append(L.Edges, MapEdge{X1: 88, Y1: streamY, X2: 108, Y2: streamY, Label: "token ids: {T}", LX: 56, LY: kvY + 12, Anchor: "start"})
	L.Stream = MapEdge{X1: 188, Y1: streamY, X2: 745, Y2: streamY, Label: fmt.Sprintf("[{T} × %d]", m.Embd), LX: 194, LY: streamY - 8, Anchor: "start"}
	m.layoutBlocks(&L)
	m.layoutHead(&L)
	L.Flow = m.flow(&L)
	L.Where = m.Where
	return L
}

// add appends a part, marking it current, done or absent for this step.
func (L *MapLayout) add(m *ModelMap, p MapPart) {
	if p.Short == "" {
		p.Short = p.Label
	}
	k := mapKey(p.Stage, p.Layer, p.Filter)
	rank, present := m.Present[k]
	p.Off, p.Drift = m.Off[k], m.Drift[k]
	if p.Stage != "" && !present {
		p.Absent = true
	}
	if p.Stage != "" && k == mapKey(m.Here.Name, m.Here.Layer+1, m.Here.SamplerStep+1) {
		p.Here = true
	} else if p.Stage != "" && !p.Absent && rank < m.Here.Rank {
		p.Done = true
	}
	L.Parts = append(L.Parts, p)
}

// mapKey names a stage as the map and its session agree on: name, then
// the 1-based layer or filter where there is one.
func mapKey(name string, layer, filter int) string {
	switch {
	case layer > 0:
		return fmt.Sprintf("%s-%d", name, layer)
	case filter > 0:
		return fmt.Sprintf("%s-%d", name, filter)
	}
	return name
}

// MapKey is mapKey for a pipeline stage (0-based layer and sampler step,
// -1 where they do not apply).
func MapKey(s Stage) string { return mapKey(s.Name, s.Layer+1, s.SamplerStep+1) }

// layoutBlocks draws the layers on the residual stream: attention and
// MLP each branch off the stream and add back at a ⊕; the KV cache sits
// below, written and read by every attention block.
func (m *ModelMap) layoutBlocks(L *MapLayout) {
	n := max(m.Layers, 1)
	lw := (blockX1 - blockX0) / float64(n)
	every := int(math.Ceil(float64(n) / 10))
	inline := lw >= 80
	for i := range n {
		x := blockX0 + float64(i)*lw
		ax, mx, w := x+lw*0.06, x+lw*0.53, lw*0.40
		attn := MapPart{Key: fmt.Sprintf("attention-%d", i+1), Label: "attn", X: ax, Y: blkY, W: w, H: blkH, Stage: "attention", Layer: i + 1, Inline: inline,
			Short: fmt.Sprintf("layer %d attention", i+1)}
		if i < len(m.Local) && m.Local[i] {
			attn.Label, attn.Local, attn.Short = "local", true, fmt.Sprintf("layer %d attention (local, last %d positions)", i+1, m.Window)
			attn.Title = fmt.Sprintf("Layer %d attention, local: each of the {T} new positions sees only the last %d positions (a sliding window); %d query heads (%d K/V heads) of %d values, scores %s.",
				i+1, m.Window, m.Heads, m.KVHeads, m.HeadDim, m.Score)
		}
		L.add(m, attn)
		L.add(m, MapPart{Key: fmt.Sprintf("mlp-%d", i+1), Label: "MLP", X: mx, Y: blkY, W: w, H: blkH, Stage: "mlp", Layer: i + 1, Inline: inline,
			Short: fmt.Sprintf("layer %d MLP", i+1)})
		for _, bx := range []float64{ax, mx} {
			L.Edges = append(L.Edges, MapEdge{X1: bx + w*0.2, Y1: streamY, X2: bx + w*0.2, Y2: blkY + blkH}, MapEdge{X1: bx + w*0.8, Y1: blkY + blkH, X2: bx + w*0.8, Y2: streamY})
			L.Joins = append(L.Joins, MapEdge{X1: bx + w*0.8, Y1: streamY})
		}
		L.Under = append(L.Under, MapEdge{X1: ax + w*0.5, Y1: blkY + blkH, X2: ax + w*0.5, Y2: kvY, Dashed: true})
		if !inline && (i%every == 0 || i == n-1) {
			L.Texts = append(L.Texts, MapEdge{X1: x + lw/2, Y1: blkY - 3, Label: fmt.Sprintf("L%d", i+1)})
		} else if inline {
			L.Texts = append(L.Texts, MapEdge{X1: x + lw/2, Y1: blkY - 3, Label: fmt.Sprintf("layer %d", i+1)})
		}
	}
	L.Texts = append(L.Texts, MapEdge{X1: (blockX0 + blockX1) / 2, Y1: 11, Label: fmt.Sprintf("%d layers, each attention + MLP added to the residual stream", n)})
	global := ""
	if len(m.Local) > 0 {
		global = ", global"
	}
	L.AttnTitle = fmt.Sprintf("Layer {L} attention%s: %d query heads (%d K/V heads) of %d values; each of the {T} new positions weighs the visible keys by softmax(%s).",
		global, m.Heads, m.KVHeads, m.HeadDim, m.Score)
	L.MLPTitle = fmt.Sprintf("Layer {L} MLP (%s): [{T} × %d] → [{T} × %d] → [{T} × %d].", m.MLPKind, m.Embd, m.FFN, m.Embd)
	L.add(m, MapPart{Key: "kv", Short: "KV cache", Label: fmt.Sprintf("KV cache: {C} positions × %d layers × (K, V)", n), X: blockX0, Y: kvY, W: blockX1 - blockX0, H: kvH, Stage: "kv", Inline: true,
		Title: fmt.Sprintf("KV cache: every layer keeps each position's keys and values (%d K/V heads × %d values each); {C} positions cached, {B} bytes in use after this step.",
			m.KVHeads, m.HeadDim)})
}

// layoutHead draws what follows the last layer: the final norm, logits,
// softmax, each sampler filter and the draw, and the loop back.
func (m *ModelMap) layoutHead(L *MapLayout) {
	L.add(m, MapPart{Key: "norm", Label: "norm", X: 745, Y: boxY, W: 52, H: boxH, Inline: true,
		Title: fmt.Sprintf("Final %s of the last position's %d values (shown with the logits stage).", m.Norm, m.Embd)})
	L.add(m, MapPart{Key: "logits", Label: "logits", X: 812, Y: boxY, W: 72, H: boxH, Stage: "logits", Inline: true,
		Title: fmt.Sprintf("Logits: the last position's [1 × %d] times the output matrix [%d × %d] gives %d raw scores, one per token.", m.Embd, m.Embd, m.Vocab, m.Vocab)})
	L.Edges = append(L.Edges, MapEdge{X1: 797, Y1: streamY, X2: 812, Y2: streamY, Label: fmt.Sprintf("[1 × %d]", m.Embd), LX: 804, LY: boxY - 8})
	L.add(m, MapPart{Key: "softmax", Label: "softmax", X: 898, Y: boxY, W: 76, H: boxH, Stage: "softmax", Inline: true,
		Title: fmt.Sprintf("Softmax: p = exp(z / T) / Σ exp(z / T) over all %d tokens, T = %s; the probabilities sum to 1.", m.Vocab, m.Temperature)})
	L.Edges = append(L.Edges, MapEdge{X1: 884, Y1: streamY, X2: 898, Y2: streamY, Label: fmt.Sprintf("[1 × %d]", m.Vocab), LX: 893, LY: kvY + 12, Anchor: "end"}) // ends at softmax: a 6-digit vocabulary's label clears the sampler chain's
	m.layoutChain(L, 990, 112)
	st := "Sample: a uniform u in [0, 1) is drawn; the token is the first kept candidate whose cumulative probability passes u (the most likely one at T = 0)."
	L.add(m, MapPart{Key: "sample", Label: "sample", X: 1116, Y: boxY, W: 76, H: boxH, Stage: "sample", Inline: true, Title: st})
	L.Edges = append(L.Edges, MapEdge{X1: 1102, Y1: streamY, X2: 1116, Y2: streamY})
	L.Loop = fmt.Sprintf("M1154 %.0f L1154 %.0f L48 %.0f L48 %.0f", boxY+boxH, loopY, loopY, boxY+boxH)
	L.Texts = append(L.Texts, MapEdge{X1: 960, Y1: loopY - 5, Label: "the drawn token is the next step's input"})
}

// layoutChain draws the sampler chain as a funnel: one slice per filter,
// its height growing with the log of the candidates it keeps.
func (m *ModelMap) layoutChain(L *MapLayout, x0, w float64) {
	L.Edges = append(L.Edges, MapEdge{X1: 974, Y1: streamY, X2: x0, Y2: streamY})
	if len(m.Filters) == 0 {
		return
	}
	fw := w / float64(len(m.Filters))
	for i, f := range m.Filters {
		title := fmt.Sprintf("Sampler step %d, %s (%s): candidates {I%d} in, {O%d} kept.", i+1, f.Name, f.Setting, i+1, i+1)
		if f.Skipped {
			title = fmt.Sprintf("Sampler step %d, %s (%s): off at this setting; every candidate passes ({I%d}).", i+1, f.Name, f.Setting, i+1)
		}
		h := m.sliceHeight(f.Out)
		L.add(m, MapPart{Key: fmt.Sprintf("sampler-%d", i+1), Label: fmt.Sprintf("{O%d}", i+1), Short: fmt.Sprintf("sampler step %d, %s", i+1, f.Name),
			X: x0 + float64(i)*fw + 1, Y: streamY - h/2, W: fw - 2, H: h, Stage: "sampler", Filter: i + 1, Inline: fw >= 40, Title: title, Tag: f.Name})
	}
	L.Texts = append(L.Texts, MapEdge{X1: x0 + w/2, Y1: kvY + 12, Label: fmt.Sprintf("sampler chain: {I1} → {O%d}", len(m.Filters))})
}

// Name is a part's accessible name: the text it shows inside, when it
// shows one, then what it is ("attn: layer 3 attention"), so the name
// holds what is on screen (WCAG 2.5.3, label in name).
func (p MapPart) Name() string {
	switch {
	case !p.Inline || p.Label == "" || strings.Contains(p.Short, p.Label):
		return p.Short
	case strings.HasPrefix(p.Label, p.Short):
		return p.Label
	}
	return p.Label + ": " + p.Short
}

// center is a part's middle.
func (p MapPart) center() (float64, float64) { return p.X + p.W/2, p.Y + p.H/2 }

// flow is the path the data takes from the previous stage to this one:
// out of the bottom of the one, along a lane under the stream's parts,
// into the bottom of the other, so it crosses no part or label.
func (m *ModelMap) flow(L *MapLayout) string {
	if !m.HasPrev {
		return ""
	}
	var from, to *MapPart
	pk, hk := MapKey(m.Prev), MapKey(m.Here)
	for i := range L.Parts {
		switch L.Parts[i].Key {
		case pk:
			from = &L.Parts[i]
		case hk:
			to = &L.Parts[i]
		}
	}
	if from == nil || to == nil {
		return ""
	}
	x1, _ := from.center()
	x2, _ := to.center()
	return fmt.Sprintf("M%.1f %.1f L%.1f %.1f L%.1f %.1f L%.1f %.1f", x1, from.edgeToLane(), x1, flowY, x2, flowY, x2, to.edgeToLane())
}

// edgeToLane is where a part meets the flow's lane: its bottom edge when
// it is above the lane (the stream's parts, the layers), its top when
// below (the KV cache).
func (p MapPart) edgeToLane() float64 {
	if p.Y > flowY {
		return p.Y
	}
	return p.Y + p.H
}

// flowY is the lane the lit path runs along: just under the parts on the
// stream, so it crosses no part and no label.
const flowY = boxY + boxH + 8

// GotoStage is the stage a part opens, for its data attribute ("" for
// none: the part is not clickable).
func (p MapPart) GotoStage() string {
	if p.Absent {
		return ""
	}
	return p.Stage
}

// TabStop says whether p is the map's one tab stop (the parts are a
// roving group: arrow keys move between them): the part the viewer is
// at, or the first part that opens a stage when none is.
func (L MapLayout) TabStop(p MapPart) bool {
	if p.GotoStage() == "" {
		return false
	}
	for _, q := range L.Parts {
		if q.Here && q.GotoStage() != "" {
			return q.Key == p.Key
		}
	}
	for _, q := range L.Parts {
		if q.GotoStage() != "" {
			return q.Key == p.Key
		}
	}
	return false
}

// Class is a part's CSS classes.
func (p MapPart) Class() string {
	c := "part"
	if p.Here {
		c += " here"
	}
	if p.Done {
		c += " done"
	}
	if p.Absent || p.Stage == "" {
		c += " inert"
	}
	if p.Local {
		c += " local"
	}
	if p.Off {
		c += " off"
	}
	if p.Drift > 0 {
		c += fmt.Sprintf(" drift%d", p.Drift)
	}
	return c
}

// States is each part's classes where they are not the plain "part", as
// "key=classes" pairs: what a page that already has the drawing needs to
// light the current stage.
func (L MapLayout) States() string {
	var b strings.Builder
	for _, p := range L.Parts {
		if c := p.Class(); c != "part" {
			if b.Len() > 0 {
				b.WriteByte(';')
			}
			b.WriteString(p.Key + "=" + c)
		}
	}
	return b.String()
}

// EdgePath is every plain (or every dashed) edge as one path.
func (L MapLayout) EdgePath(dashed bool) string {
	var b strings.Builder
	for _, e := range L.Edges {
		if e.Dashed == dashed {
			fmt.Fprintf(&b, "M%s %sL%s %s", f1(e.X1), f1(e.Y1), f1(e.X2), f1(e.Y2))
		}
	}
	return b.String()
}

// UnderPath is the KV cache's links, drawn beneath the stream, as one path.
func (L MapLayout) UnderPath() string {
	var b strings.Builder
	for _, e := range L.Under {
		fmt.Fprintf(&b, "M%s %sL%s %s", f1(e.X1), f1(e.Y1), f1(e.X2), f1(e.Y2))
	}
	return b.String()
}

// JoinPath is every ⊕ on the stream as one path of small circles.
func (L MapLayout) JoinPath() string {
	var b strings.Builder
	for _, j := range L.Joins {
		fmt.Fprintf(&b, "M%s %sa3 3 0 1 0 6 0a3 3 0 1 0-6 0", f1(j.X1-3), f1(j.Y1))
	}
	return b.String()
}

// nums are the step's numbers (see MapLayout.nums).
func (m *ModelMap) nums() map[string]string {
	n := map[string]string{"T": itoa(max(m.Tokens, 1)), "C": itoa(m.Cached), "B": itoa(m.KVBytes)}
	for i, f := range m.Filters {
		k := itoa(i + 1)
		n["I"+k], n["O"+k], n["H"+k] = itoa(f.In), itoa(f.Out), f1(m.sliceHeight(f.Out))
	}
	return n
}

// sliceHeight is a sampler slice's height for n candidates kept: it grows
// with the log of n, so 1 of 50,000 stays visible.
func (m *ModelMap) sliceHeight(n int) float64 {
	return 6 + (boxH-6)*math.Min(1, math.Log(float64(n)+1)/math.Log(float64(max(m.Vocab, 2))+1))
}

// Fill writes the step's numbers into a text of the drawing.
func (L MapLayout) Fill(s string) string {
	if !strings.Contains(s, "{") {
		return s
	}
	for k, v := range L.nums {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return s
}

// Tpl is s when it names step numbers (the page refills it), else "".
func Tpl(s string) string {
	if strings.Contains(s, "{") {
		return s
	}
	return ""
}

// Nums is the step's numbers as "K=V" pairs, for the map's state.
func (L MapLayout) Nums() string {
	keys := make([]string, 0, len(L.nums))
	for k := range L.nums {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(k + "=" + L.nums[k])
	}
	return b.String()
}

// drawnParam tells the page's WebSocket which map drawing the page has,
// so the first step sends only its state.
func drawnParam(m *ModelMap) string {
	if m == nil || m.Key == "" {
		return ""
	}
	return "&drawn=" + m.Key
}

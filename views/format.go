package views

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"

	"github.com/a-h/templ"
)

// explorerOn is the Explorer with a model chosen (a Models page's link).
func explorerOn(model string) templ.SafeURL {
	return templ.SafeURL("/?" + url.Values{"model": {model}}.Encode())
}

// f formats a number compactly for tables.
func f(v float64) string {
	switch {
	case math.IsInf(v, -1):
		return "−∞"
	case math.IsNaN(v):
		return "masked"
	case v != 0 && math.Abs(v) < 1e-3:
		return strconv.FormatFloat(v, 'e', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

func f32(v float32) string { return f(float64(v)) }

func pct(p float64) string { return fmt.Sprintf("%.2f%%", 100*p) }

// pctOf writes a small fraction as a percentage with three significant
// digits (a relative error of 0.0000123 is 0.00123 %).
func pctOf(x float64) string { return fmt.Sprintf("%.3g %%", 100*x) }

func itoa(n int) string { return strconv.Itoa(n) }

func id32(n int32) string { return strconv.Itoa(int(n)) }

// heat maps v in [-max, max] to a diverging colour (blue negative, orange
// positive) for strips and heatmaps.
func heat(v, maxAbs float32) string {
	if maxAbs <= 0 || math.IsNaN(float64(v)) {
		return "#444"
	}
	t := float64(v / maxAbs)
	t = math.Max(-1, math.Min(1, t))
	if t >= 0 {
		return fmt.Sprintf("rgb(%d,%d,%d)", 40+int(215*t), 40+int(120*t), 40)
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", 40, 40+int(100*-t), 40+int(215*-t))
}

// seq (0..1) colour for attention weights.
func seqHeat(v, lo, hi float32) string {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		return "#222"
	}
	t := 0.0
	if hi > lo {
		t = float64((v - lo) / (hi - lo))
	}
	t = math.Max(0, math.Min(1, t))
	return fmt.Sprintf("rgb(%d,%d,%d)", 20+int(235*t), 20+int(200*t), 60+int(60*t))
}

func fx(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// f1 is a chart coordinate with one decimal, trailing zeros dropped.
func f1(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// beforePct is a probability going into a sampler step ("—" when the
// trace did not record it).
func beforePct(p float64) string {
	if p < 0 {
		return "—"
	}
	return pct(p)
}

// funnelWidth is a funnel bar's width for n candidates out of all: the
// log scale keeps 1 of 50,000 visible beside 50,000.
func funnelWidth(n, all int) float64 {
	if all < 2 {
		return 420
	}
	return 20 + 400*math.Log(float64(n)+1)/math.Log(float64(all)+1)
}

// endOf is the full stop after the last item of a list of n.
func endOf(i, n int) string {
	if i == n-1 {
		return "."
	}
	return ""
}

// labelEvery is how often to label n positions so labels never overlap:
// every one up to 24, then thinner.
func labelEvery(n int) int { return max(1, (n+23)/24) }

// short cuts a token label to 10 characters for an axis.
func short(s string) string {
	r := []rune(s)
	if len(r) <= 10 {
		return s
	}
	return string(r[:9]) + "…"
}

// arcSpacing is the distance between positions in the arcs view.
func arcSpacing(n int) float64 { return math.Max(14, math.Min(70, 900/float64(max(n, 1)))) }

// arcPath is an arc from the query at qx up and over to the key at kx
// (a loop on itself when they are the same position).
func arcPath(qx, kx float64) string { return arcPathAt(qx, kx, 124) }

// arcPathAt is arcPath on a baseline at y.
func arcPathAt(qx, kx, y float64) string {
	if qx == kx {
		return fmt.Sprintf("M%.1f %.1f C%.1f %.1f %.1f %.1f %.1f %.1f", qx-6, y, qx-14, y-34, qx+14, y-34, qx+6, y)
	}
	h := math.Min(118, 16+math.Abs(qx-kx)*0.35)
	return fmt.Sprintf("M%.1f %.1f Q%.1f %.1f %.1f %.1f", qx, y, (qx+kx)/2, y-2*h, kx, y)
}

// headVals is a head thumbnail's message: show that head, keeping the
// scores toggle.
func headVals(h int, scores bool) string {
	if scores {
		return fmt.Sprintf(`{"action":"view","head":"%d","scores":"1"}`, h)
	}
	return fmt.Sprintf(`{"action":"view","head":"%d"}`, h)
}

// heatValues writes a matrix for the page's heatmap painter: rows split by
// ";", values by " ", a masked (NaN) cell as "x".
func heatValues(rows [][]float32) string {
	var b []byte
	for i, r := range rows {
		if i > 0 {
			b = append(b, ';')
		}
		for j, x := range r {
			if j > 0 {
				b = append(b, ' ')
			}
			if math.IsNaN(float64(x)) {
				b = append(b, 'x')
				continue
			}
			b = strconv.AppendFloat(b, float64(x), 'g', 4, 32)
		}
	}
	return string(b)
}

// labelsJSON is a list of labels as a JSON array, for a data attribute.
func labelsJSON(l []string) string {
	b, _ := json.Marshal(l)
	return string(b)
}

// tokenTitle is a token's hover: id, exact bytes (quoted and in hex) and
// its span in the text.
func tokenTitle(t Token) string {
	s := fmt.Sprintf("id %d · bytes %s", t.ID, t.Bytes)
	if t.Hex != "" {
		s += " (" + t.Hex + ")"
	}
	if t.Note != "" {
		s += " · " + t.Note
	}
	if t.Added {
		return s + " · added by the tokenizer, not in the text"
	}
	return s + fmt.Sprintf(" · text bytes %d–%d", t.Start, t.End)
}

// withID is r drawn with an element id (another picture reads its values).
func withID(r VecRow, id string) VecRow { r.ID = id; return r }

// lightHeat is heat for paper: white at zero, blue for negative, orange
// for positive values.
func lightHeat(v, maxAbs float32) string {
	if maxAbs <= 0 || math.IsNaN(float64(v)) {
		return "#eee"
	}
	t := math.Max(-1, math.Min(1, float64(v/maxAbs)))
	if t >= 0 {
		return fmt.Sprintf("rgb(255,%d,%d)", 255-int(120*t), 255-int(230*t))
	}
	return fmt.Sprintf("rgb(%d,%d,255)", 255-int(230*-t), 255-int(150*-t))
}

// lightSeq is seqHeat for paper: white at lo, deep blue at hi; ink is the
// label colour that reads on it.
func lightSeq(v, lo, hi float32) (fill, ink string) {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		return "#f2f2f2", "#000"
	}
	t := 0.0
	if hi > lo {
		t = math.Max(0, math.Min(1, float64((v-lo)/(hi-lo))))
	}
	fill = fmt.Sprintf("rgb(%d,%d,%d)", 255-int(247*t), 255-int(207*t), 255-int(148*t))
	if t > 0.55 {
		return fill, "#fff"
	}
	return fill, "#000"
}

// softmaxHover is a probability's hover: what it is, with its numbers.
func softmaxHover(b Bar, s *SoftmaxPanel) string {
	if s.Norm <= 0 {
		return "the probability of this token at T = " + fx(s.Temperature)
	}
	return fmt.Sprintf("p = exp((logit − max) / T) ÷ Σ = exp((%s − %s) / %s) ÷ %s = %s",
		f(b.Logit), f(s.ZMax), fx(s.Temperature), f(s.Norm), pct(b.Value))
}

// samplerHover is a kept token's hover: its renormalised probability.
func samplerHover(b Bar, s *SamplerPanel) string {
	if s.KeptMass <= 0 || b.Before < 0 {
		return "the probability after this step, renormalised over the kept tokens"
	}
	return fmt.Sprintf("p after = p going in ÷ the kept tokens' total = %s ÷ %s = %s", pct(b.Before), pct(s.KeptMass), pct(b.Value))
}

// kvRowHover is the KV cache's bytes per position per layer, worked out.
func kvRowHover(k *KVPanel) string {
	if k.KVDim <= 0 || k.RowBytes%(2*k.KVDim) != 0 {
		return "the bytes one position takes in one layer, keys and values"
	}
	return fmt.Sprintf("2 (K and V) × %d values × %d bytes each = %d bytes", k.KVDim, k.RowBytes/(2*k.KVDim), k.RowBytes)
}

// g6 is a number for a data attribute: six significant digits.
func g6(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// branches are the draw's other likeliest tokens that have a "what if?"
// link (at most 8 considered); none: the panel offers no branch sentence.
func branches(s *SamplePanel) []CDFBar {
	var out []CDFBar
	for _, c := range s.CDF[:min(len(s.CDF), 8)] {
		if c.Branch != "" && !c.Chosen {
			out = append(out, c)
		}
	}
	return out
}

// normNote explains how the stream's length changed across a layer: the
// blocks add to the stream and nothing rescales it, so it may grow many
// times over; each block reads it through its own norm.
func normNote(before, after float32) string {
	if before <= 0 || after <= 0 {
		return ""
	}
	r := float64(after / before)
	switch {
	case r >= 2:
		return fmt.Sprintf("The stream is %.1f× longer after this layer: each block adds its output to the stream and nothing scales the stream back down. Each block reads it through its own norm, so a longer stream does not mean a louder input; the final norm rescales it before the logits.", r)
	case r <= 0.5:
		return fmt.Sprintf("The stream is %.1f× shorter after this layer: this layer's blocks added vectors pointing largely against it.", 1/r)
	}
	return "Each block adds its output to the stream; the norms show how much the length changed."
}

// DraftKOrDefault is the draft's k the form shows: the run's, or the
// default.
func (s Settings) DraftKOrDefault() string {
	if s.DraftK == "" {
		return s.DraftKDefault
	}
	return s.DraftK
}

// ablateVals is the message that switches one intervention in or out.
func ablateVals(toggle string) string {
	return fmt.Sprintf(`{"action":"ablate","toggle":%q}`, toggle)
}

// The attention table's bounds: at most maxHeatCols keys (the last) and
// maxHeatCells cells, so a long prompt's prefill stays a page's size.
const (
	maxHeatCols  = 40
	maxHeatCells = 1000
)

// heatWindow is where the attention table starts: its first query row
// and first key, the last rows and keys within the bounds.
func (a *AttentionPanel) heatWindow() (r0, c0 int) {
	c0 = max(0, len(a.KeyLabels)-maxHeatCols)
	rows := max(1, maxHeatCells/max(1, len(a.KeyLabels)-c0))
	return max(0, len(a.Cells)-rows), c0
}

// heatLeftOut says which rows and keys the attention table leaves out.
func heatLeftOut(a *AttentionPanel, r0, c0 int) string {
	s := "Left out of the table, to keep the page small:"
	if r0 > 0 {
		s += fmt.Sprintf(" the first %d query rows (positions %d–%d);", r0, a.First, a.First+r0-1)
	}
	if c0 > 0 {
		s += fmt.Sprintf(" keys 0–%d;", c0-1)
	}
	s += " the heatmap draws them"
	if len(a.Math) > 0 {
		s += ", and the current row's arithmetic below lists every key"
	}
	return s + "."
}

// heatCaption names the attention table: which layer and head, and what
// its cells hold.
func heatCaption(a *AttentionPanel) string {
	what := "attention weights after softmax (each row sums to 1)"
	if a.ShowScores {
		what = "scaled scores q·k/√d before softmax"
	}
	return fmt.Sprintf("Layer %d, head %d: %s; a row per query token, a column per key token, blank where masked (a later position)", a.Layer+1, a.Head+1, what)
}

// heatCell is one attention value as the table shows it ("" masked).
func heatCell(v float32) string {
	if math.IsNaN(float64(v)) {
		return ""
	}
	return strconv.FormatFloat(float64(v), 'f', 3, 32)
}

// lookedUp is the embedding table's row the token selects, its label
// saying so (the strip's name and its values table's caption).
func lookedUp(r VecRow) VecRow {
	r.Label += " (the row looked up)"
	return r
}

// pointName is a point of the embedding map as its hover and a screen
// reader name it: its token, and whether the prompt holds it.
func pointName(p Point) string {
	if p.Prompt {
		return p.Label + " (a prompt token)"
	}
	return p.Label + " (a neighbour)"
}

// softmaxCaption names the softmax panel's table: what its rows are.
func softmaxCaption(s *SoftmaxPanel) string {
	return fmt.Sprintf("The %d most likely of %d tokens at T = %s, most likely first; “removed”: the sampler chain removes it before the draw", len(s.Top), s.Vocab, fx(s.Temperature))
}

// chosenMark is what a candidate's hover adds when the draw chose it.
func chosenMark(chosen bool) string {
	if chosen {
		return " — chosen"
	}
	return ""
}

// maxCDFRows is how many candidates the draw's table lists.
const maxCDFRows = 16

// cdfRows is what the draw's table lists: the first maxCDFRows
// candidates, and the chosen one where it comes later; more is how many
// are left out.
func cdfRows(cdf []CDFBar) (rows []CDFBar, more int) {
	for i, c := range cdf {
		if i < maxCDFRows || c.Chosen {
			rows = append(rows, c)
		}
	}
	return rows, len(cdf) - len(rows)
}

// cdfCaption names the draw's table.
func cdfCaption(s *SamplePanel) string {
	if s.Greedy {
		return "The candidates the draw chose from: greedy, the most likely is chosen"
	}
	return fmt.Sprintf("The candidates the draw chose from, each a slice of the cumulative probability; u = %.4f falls in the chosen one's slice", s.U)
}

// kvCaption names the cache's table.
func kvCaption(k *KVPanel) string {
	return fmt.Sprintf("The cache after this step: a row per position, its key (K) and value (V) in each of the %d layers; “new”: appended this step, “cached”: read from the cache", len(k.Layers))
}

// inLayer is a KV cache row labelled with its layer ("layer 2 · K,
// position 5"): the strip's name and its values table's caption, one
// for each layer.
func inLayer(layer int, r VecRow) VecRow {
	r.Label = fmt.Sprintf("layer %d · %s", layer+1, r.Label)
	return r
}

// outMark is what a softmax bar's handout label adds when the sampler
// chain removes its token (the grey bar says it only in colour).
func outMark(out bool) string {
	if out {
		return " · removed"
	}
	return ""
}

// hereMark is what the sampler funnel's step adds to its name when it is
// the step on screen (the funnel lights it only in colour).
func hereMark(here bool) string {
	if here {
		return "; this step"
	}
	return ""
}

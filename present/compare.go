package present

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"stepthrough/engine/compare"
	"stepthrough/engine/model"
	"stepthrough/spec"
	"stepthrough/views"
)

// CompareLinks are the addresses a comparison's view links to.
type CompareLinks struct {
	Step  func(step int) string // the comparison's page at a step
	Again func(step int) string // that page measured afresh
	Query string                // the comparison's query without a step, for the exports
}

// Compare is the Compare page's result at a step (clamped to the lanes'
// length): each lane's tokens so far, its candidates at the step, its
// metrics, a beam lane's tree.
func Compare(r *compare.Result, m *model.Model, step int, links CompareLinks) *views.CompareView {
	steps := 0
	for _, l := range r.Lanes {
		steps = max(steps, len(l.Tokens))
	}
	step = min(step, max(steps-1, 0))
	link := links.Step
	v := &views.CompareView{MeasuredAt: r.MeasuredAt.Format("15:04:05"), AgainURL: links.Again(step), Step: step, Steps: steps, Divergence: r.Divergence, URL: link(step), First: link(0), Prev: link(max(step-1, 0)),
		Next: link(min(step+1, steps-1)), End: link(steps - 1), JSONURL: "/compare.json?" + links.Query, CSVURL: "/compare.csv?" + links.Query,
		PrefillMS: r.PrefillMS, CopyMS: r.CopyMS, SeparateMS: r.SeparatePrefillMS, SavedMS: r.SeparatePrefillMS - r.PrefillMS - r.CopyMS}
	labels := laneTitles(r, m)
	if r.Divergence > step {
		v.Divergence = -1 // not reached yet at this step
	}
	tk := m.Tokenizer
	piece := func(id int32) string { return views.PieceLabel(tk.Display(id)) }
	for i, l := range r.Lanes {
		lv := views.LaneView{Index: i, Spec: l.Strategy.Spec, Title: labels[i], Seed: strconv.FormatUint(l.Seed, 10), Text: tk.Decode(l.Tokens[:min(len(l.Tokens), step+1)])}
		if l.Strategy.Kind != "sample" {
			lv.Seed = "—"
		}
		for j, id := range l.Tokens[:min(len(l.Tokens), step+1)] {
			lv.Tokens = append(lv.Tokens, views.LaneToken{Step: j, ID: id, Piece: piece(id), Diverged: r.Divergence >= 0 && j >= r.Divergence, Forced: l.Steps[j].Forced, Current: j == step})
		}
		if step < len(l.Steps) && l.Beam == nil { // a beam lane's step is the tree below
			st := l.Steps[step]
			cur := &views.LaneStepView{Greedy: st.Greedy, Forced: st.Forced, U: st.U, Chosen: st.Token, ChosenPiece: piece(st.Token),
				Round: l.Strategy.Kind == "speculative" && step > 0}
			cur.Dist = laneDist(cur)
			for _, c := range st.Top { // on one 0–100% scale
				cur.Top = append(cur.Top, views.Bar{ID: c.ID, Piece: piece(c.ID), Value: float64(c.P), Width: 100 * float64(c.P), Chosen: c.ID == st.Token})
			}
			lv.Current = cur
		}
		mt := l.Metrics
		lv.Metrics = []views.Metric{
			{Name: "tokens", Value: strconv.Itoa(mt.Tokens)}, {Name: "mean log p (model)", Value: fmt.Sprintf("%.4f", mt.MeanLogProb)}, {Name: "perplexity", Value: fmt.Sprintf("%.3f", mt.Perplexity)},
			{Name: "distinct-1 / distinct-2", Value: fmt.Sprintf("%.2f / %.2f", mt.Distinct1, mt.Distinct2)}, {Name: "repeated 3-grams", Value: strconv.Itoa(mt.RepeatedTrigrams)}, {Name: "stop", Value: mt.Stop},
			{Name: "speed (measured)", Value: l.Speed()},
		}
		if l.Speculative != nil {
			lv.Metrics = append(lv.Metrics, views.Metric{Name: "draft", Value: l.DraftSummary()})
		}
		if l.Beam != nil {
			lv.Beam = beamTree(l.Beam, step, piece)
		}
		v.Lanes = append(v.Lanes, lv)
	}
	return v
}

// laneDist names the distribution a lane's candidates column shows, which
// differs from lane to lane: a plain lane's probabilities after its own
// chain (greedy: all on the argmax), a speculative round's the target's
// (what the draft's guesses were checked against; greedy: the raw model
// at temperature 1, whose argmax the round keeps).
func laneDist(c *views.LaneStepView) string {
	switch {
	case c.Round && c.Greedy:
		return "the target model's p at temperature 1 (the round keeps its argmax)"
	case c.Round:
		return "the target's p after this lane's sampler chain (the draft's guesses are checked against it)"
	case c.Greedy:
		return "p after this lane's chain: greedy puts it all on the argmax"
	}
	return "p after this lane's sampler chain"
}

// beamTree lays out the kept hypotheses of steps 0..upto: one column per
// step, one row per beam, an edge to the parent.
func beamTree(b *compare.BeamResult, upto int, piece func(int32) string) *views.BeamTree {
	t := &views.BeamTree{Why: b.Why}
	for _, id := range b.Best.Tokens {
		t.Best += piece(id) + " "
	}
	t.Best = strings.TrimSpace(t.Best)
	onBest := func(prefix []int32) bool {
		return len(prefix) <= len(b.Best.Tokens) && slices.Equal(prefix, b.Best.Tokens[:len(prefix)])
	}
	prefixes := map[int][]int32{0: nil} // beam index at the previous step -> its tokens
	const dx, dy, x0, y0 = 110, 26, 10, 16
	prevRow := map[int]int{} // beam index at the previous step -> row
	prevRow[0] = 0
	rows := 1
	for s, st := range b.Steps {
		if s > upto {
			break
		}
		row := map[int]int{}
		nextPrefixes := map[int][]int32{}
		kept, pruned := 0, 0
		var bestPruned *compare.BeamCandidate
		for i := range st.Candidates {
			c := &st.Candidates[i]
			if !c.Kept {
				pruned++
				if bestPruned == nil {
					bestPruned = c
				}
				continue
			}
			y := y0 + kept*dy
			x := x0 + (s+1)*dx
			prefix := append(slices.Clone(prefixes[c.Parent]), c.Token)
			best := onBest(prefix)
			t.Nodes = append(t.Nodes, views.BeamNode{X: x, Y: y, Label: fmt.Sprintf("%s %.2f", piece(c.Token), c.LogProb), LogProb: c.LogProb, Done: c.Done, Best: best})
			t.Edges = append(t.Edges, views.BeamEdge{X1: x0 + s*dx, Y1: y0 + prevRow[c.Parent]*dy, X2: x, Y2: y, Best: best})
			if !c.Done {
				nextPrefixes[len(row)] = prefix
				row[len(row)] = kept
			}
			kept++
		}
		rows = max(rows, kept)
		note := fmt.Sprintf("step %d: %d candidates, %d kept, %d pruned", s+1, len(st.Candidates), kept, pruned)
		if bestPruned != nil {
			note += fmt.Sprintf(" (best pruned: %s, log p %.3f)", piece(bestPruned.Token), bestPruned.LogProb)
		}
		t.Pruned = append(t.Pruned, note)
		prevRow, prefixes = row, nextPrefixes
	}
	t.Width = x0 + (min(upto, len(b.Steps)-1)+2)*dx + 40
	t.Height = y0 + rows*dy
	return t
}

// laneTitles are the lanes' headings in words: a what-if branch says
// which lane it follows and the token it forces at which step, instead of
// its spec's ids.
func laneTitles(r *compare.Result, m *model.Model) []string {
	out := make([]string, len(r.Lanes))
	show := func(id int32) string { return views.PieceLabel(m.Tokenizer.Display(id)) }
	for i, l := range r.Lanes {
		out[i] = l.Strategy.Spec
		f := l.Strategy.Force
		if len(f) == 0 {
			continue
		}
		base := l.Strategy.Spec
		if k := strings.Index(base, "force="); k >= 0 {
			base = strings.TrimSuffix(base[:k], ",")
		}
		base = cmp.Or(base, "greedy")
		at := len(f) - 1
		out[i] = fmt.Sprintf("forces its first %d tokens (the last %s), then samples as %s", len(f), show(f[at]), base)
		for j, o := range r.Lanes {
			if j != i && len(o.Tokens) >= at && slices.Equal(o.Tokens[:at], f[:at]) && (at >= len(o.Tokens) || o.Tokens[at] != f[at]) {
				out[i] = fmt.Sprintf("what if step %d were %s? (lane %d's tokens before it, then %s)", at+1, show(f[at]), j+1, base)
				break
			}
		}
	}
	return out
}

// The empty form's prompt and lanes: a prompt whose first token the
// strategies already choose differently on the default model (after "Once
// upon a time" every lane writes "," first), so the lanes differ at step 1.
var (
	CompareDefaultPrompt = "Once upon a time, there was a"
	CompareDefaultLanes  = []string{"greedy", "temperature=0.8,seed=1", "temperature=1.5,top-p=0.9,seed=1", "beam=3"}
)

// compareLaneFields is how many lane fields the form has.
const compareLaneFields = 6

// CompareForm is the Compare page's form as the viewer filled it in
// (blank: nothing asked yet, the default prompt and lanes instead), with
// an empty field for each lane not given.
func CompareForm(models []string, prompt, model string, n int, seed string, lanes []string, blank bool) views.ComparePage {
	page := views.ComparePage{PromptMax: spec.MaxPromptChars, Models: models, Prompt: prompt, Model: model, N: strconv.Itoa(n), Seed: seed}
	if blank {
		page.Prompt, page.LaneSpecs = CompareDefaultPrompt, slices.Clone(CompareDefaultLanes)
	} else {
		page.LaneSpecs = lanes
	}
	for len(page.LaneSpecs) < compareLaneFields {
		page.LaneSpecs = append(page.LaneSpecs, "")
	}
	return page
}

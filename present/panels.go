package present

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"stepthrough/engine/intervene"
	"stepthrough/engine/sample"
	"stepthrough/engine/tokenizer"
	"stepthrough/engine/trace"
	"stepthrough/spec"
	"stepthrough/views"
)

// The builders of the stage registry: each turns a trace step into its
// stage's view model.

// pieces labels every position the cache holds at step at (prompt and
// generated tokens; a speculative round's rejected proposals hold their
// positions until the next round writes over them).
func (s *snap) pieces(at *trace.Step) []string {
	var all []string
	for _, st := range s.Cursor.Steps {
		all = all[:min(len(all), st.Pos0)]
		for _, id := range st.Tokens {
			all = append(all, s.piece(id))
		}
		if st == at {
			break
		}
	}
	return all
}

func (s *snap) piece(id int32) string { return views.PieceLabel(s.Model.Tokenizer.Display(id)) }

func vecRow(label string, v []float32) views.VecRow {
	var m float32
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x))))
	}
	return views.VecRow{Label: label, Values: v, Max: m}
}

func (s *snap) tokenizePanel(st *trace.Step, _ trace.Stage) views.Panel {
	tk := s.Model.Tokenizer
	t := &views.TokenizePanel{Text: st.Tokenize.Text, BOS: st.Tokenize.AddedBOS}
	var partial []byte // bytes of an unfinished character
	for _, x := range st.Tokenize.Tokens {
		raw := tk.Bytes(x.ID)
		special := tk.Type(x.ID) == tokenizer.TypeControl
		tok := views.Token{ID: x.ID, Bytes: strconv.Quote(tk.Display(x.ID)), Piece: tk.Piece(x.ID), Start: x.Start, End: x.End, Added: x.Added,
			Hex: fmt.Sprintf("% x", raw), Show: views.ShowPiece(tk.Display(x.ID)), Note: views.PieceNote(tk.Display(x.ID)), Special: special}
		if !special && !utf8.Valid(raw) {
			tok.Show = fmt.Sprintf("0x%X", raw) // part of a character: its bytes
		}
		t.Tokens = append(t.Tokens, tok)
		switch n := len(t.Groups); {
		case !special && len(partial) > 0 && n > 0: // continue a byte group
			partial = append(partial, raw...)
			g := &t.Groups[n-1]
			g.Tokens = append(g.Tokens, tok)
			if utf8.Valid(partial) {
				g.Text, partial = string(partial), nil
			}
		case !special && !utf8.Valid(raw): // a token holding part of a character
			partial = append([]byte(nil), raw...)
			t.Groups = append(t.Groups, views.TokenGroup{Bytes: true, Text: strconv.Quote(string(raw)), Tokens: []views.Token{tok}})
		default:
			partial = nil
			t.Groups = append(t.Groups, views.TokenGroup{Text: tok.Show, Tokens: []views.Token{tok}})
		}
	}
	return t
}

func (s *snap) mlpPanel(st *trace.Step, stage trace.Stage) views.Panel {
	L := layerOf(st, stage.Layer)
	last := len(L.MLP.Out) - 1
	m := &views.MLPPanel{Layer: stage.Layer, Kind: L.MLP.Kind, Toggle: fmt.Sprintf("L%dmlp", stage.Layer+1)}
	m.Off = s.edited(stage.Layer, intervene.MLP, -1)
	m.AttnToggle, m.AttnOff = fmt.Sprintf("L%dattn", stage.Layer+1), s.edited(stage.Layer, intervene.Attn, -1)
	if len(L.MLP.Act) > 0 {
		m.Act = vecRow("activation", L.MLP.Act[last])
		s.mlpUnits(m, L.MLP, last)
		m.TopUnits = s.unitToggles(stage.Layer, L.MLP.Act[last])
	}
	m.Out = vecRow("the block's output (down projection)", L.MLP.Out[last])
	if L.ResidAttn != nil && L.ResidMLP != nil {
		m.NormAfterAttn, m.NormAfterMLP = L.ResidAttn.Norms[last], L.ResidMLP.Norms[last]
		if last < len(L.ResidAttn.X) && last < len(L.ResidMLP.X) {
			m.ResidBefore = vecRow("the residual stream after attention", L.ResidAttn.X[last])
			m.ResidAfter = vecRow("the residual stream after the MLP", L.ResidMLP.X[last])
		}
		if stage.Layer == 0 && st.Embed != nil {
			m.NormBefore = norm(st.Embed.Input[last])
		} else if prev := layerOf(st, stage.Layer-1); prev != nil && prev.ResidMLP != nil {
			m.NormBefore = prev.ResidMLP.Norms[last]
		}
	}
	return m
}

// mlpUnits fills the hidden units before and after the nonlinearity (the
// first maxUnits of them): GELU's input and output are the engine's; for
// SwiGLU the engine records the gate and silu(gate)·up, and silu(gate) is
// gate/(1+e^−gate), which TestMLPUnits checks against the engine's product.
func (s *snap) mlpUnits(m *views.MLPPanel, x *trace.MLP, last int) {
	act := x.Act[last]
	m.FFN = len(act)
	per := 2 // strips of hidden units: before and after (SwiGLU adds up and the product)
	if len(x.Gate) > last {
		per = 4
	}
	units := min(maxUnits, max(64, (stripBudget-3*len(x.Out[last]))/per))
	m.Shown = min(len(act), units)
	cut := func(v []float32) []float32 { return v[:min(len(v), units)] }
	switch {
	case len(x.Gate) > last && len(x.Up) > last:
		gate := cut(x.Gate[last])
		post := make([]float32, len(gate))
		for i, g := range gate {
			post[i] = float32(float64(g) / (1 + math.Exp(-float64(g))))
		}
		m.Pre, m.Post = vecRow("gate, before SiLU", gate), vecRow("silu(gate)", post)
		m.Up = vecRow("up", cut(x.Up[last]))
		m.Act = vecRow("silu(gate) · up", cut(act))
	case len(x.Up) > last:
		m.Pre, m.Post = vecRow("up, before GELU", cut(x.Up[last])), vecRow("gelu(up)", cut(act))
		m.Act = views.VecRow{}
	}
}

func (s *snap) samplePanel(st *trace.Step, _ trace.Stage) views.Panel {
	sm := st.Sample
	chosen := sm.Candidates[sm.Index]
	sp := &views.SamplePanel{Greedy: sm.Greedy, U: sm.U, Chosen: views.Bar{ID: chosen.ID, Piece: s.piece(chosen.ID), Value: float64(chosen.P), Chosen: true}}
	from := 0.0
	step, _ := s.Cursor.Position()
	for i, c := range sm.Candidates {
		sp.CDF = append(sp.CDF, views.CDFBar{ID: c.ID, Piece: s.piece(c.ID), P: float64(c.P), From: from, To: sm.CDF[i], Chosen: i == sm.Index, Branch: s.branchURL(step, c.ID)})
		from = sm.CDF[i]
	}
	return sp
}

func (s *snap) kvPanel(st *trace.Step, _ trace.Stage) views.Panel {
	k := &views.KVPanel{Saved: st.Pos0}
	for _, L := range st.Layers {
		kl := views.KVLayer{Layer: L.Index, Len: L.KVLen}
		if len(k.Layers) < min(maxKVLayers, max(1, stripBudget*2/3/(2*max(1, s.Model.Config.KVDim())))) { // the table takes the rest
			from := max(0, len(L.NewK)-1) // the newest row tells the story
			kl.NotDrawn = from
			for i, row := range L.NewK[from:] {
				kl.NewK = append(kl.NewK, vecRow(fmt.Sprintf("K, position %d", st.First+from+i), row))
			}
			for i, row := range L.NewV[min(from, len(L.NewV)):] {
				kl.NewV = append(kl.NewV, vecRow(fmt.Sprintf("V, position %d", st.First+from+i), row))
			}
			k.LayersDrawn++
		}
		k.Layers = append(k.Layers, kl)
		k.BytesUsed, k.BytesAlloc, k.Len, k.Capacity = L.KVBytesUsed, L.KVBytesAll, L.KVLen, L.KVCapacity
	}
	k.Appended, k.KVDim = k.Len-st.Pos0, s.Model.Config.KVDim()
	if n := len(k.Layers); n > 0 && k.Len > 0 {
		k.RowBytes = k.BytesUsed / (n * k.Len)
	}
	labels := s.pieces(st)
	first := max(0, k.Len-maxKVPositions)
	k.NotListed = first
	for p := first; p < k.Len; p++ {
		tok := ""
		if p < len(labels) {
			tok = labels[p]
		}
		k.Positions = append(k.Positions, views.KVPos{Pos: p, Token: tok, New: p >= st.Pos0})
	}
	return k
}

func layerOf(st *trace.Step, l int) *trace.Layer {
	for _, L := range st.Layers {
		if L.Index == l {
			return L
		}
	}
	return nil
}

func norm(v []float32) float32 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	return float32(math.Sqrt(ss))
}

func (s *snap) attentionPanel(st *trace.Step, stage trace.Stage) views.Panel {
	labels := s.pieces(st)
	a := layerOf(st, stage.Layer).Attention
	head := min(s.View.Head, a.Heads-1)
	ctx := st.Pos0 + st.N
	v := &views.AttentionPanel{Layer: stage.Layer, Layers: s.Model.Config.Layers, Head: head, Heads: a.Heads, KVHead: head / (a.Heads / a.KVHeads),
		ShowScores: s.View.Scores, First: st.First, KeyLabels: labels[:ctx], Min: float32(math.Inf(1)), Max: float32(math.Inf(-1)),
		Toggle: fmt.Sprintf("L%dH%d", stage.Layer+1, head+1), HeadOff: s.edited(stage.Layer, intervene.Head, head), OffNote: s.offNote(stage.Layer, head)}
	src := a.Weights
	if s.View.Scores {
		src = a.Scores
	}
	for t, perHead := range src {
		row := make([]float32, ctx)
		for j := range row {
			row[j] = float32(math.NaN())
		}
		copy(row, perHead[head])
		for _, x := range perHead[head] {
			v.Min, v.Max = min(v.Min, x), max(v.Max, x)
		}
		v.Cells = append(v.Cells, row)
		v.QueryLabels = append(v.QueryLabels, labels[st.First+t])
	}
	if !s.View.Scores {
		v.Min, v.Max = 0, 1 // weights: one scale for every view, so colours compare
	}
	v.Current = len(v.Cells) - 1
	s.attentionRow(v, a, head, labels)
	return v
}

// attentionRow fills the current token's pictures: its weights as arcs,
// every head's weights (the head grid), and the softmax of its scores as
// arithmetic with the engine's numbers.
func (s *snap) attentionRow(v *views.AttentionPanel, a *trace.Attention, head int, labels []string) {
	v.Scale, v.HeadDim = a.Scale, a.HeadDim
	if n := len(a.Weights); n > 0 {
		w := a.Weights[n-1]
		v.Arcs = w[head]
		if top := byValueDesc(w[head]); len(top) > 0 {
			v.FocusPos, v.FocusKey, v.FocusW = top[0], labels[top[0]], w[head][top[0]]
		}
		for h := range w {
			v.HeadRows = append(v.HeadRows, vecRow(fmt.Sprintf("head %d%s", h+1, s.headTag(v.Layer, h)), w[h]))
		}
	}
	n := len(a.Scores)
	if n == 0 || len(a.Weights) != n {
		return
	}
	sc, w := a.Scores[n-1][head], a.Weights[n-1][head]
	v.MathMax = math.Inf(-1)
	for _, x := range sc {
		v.MathMax = max(v.MathMax, float64(x))
	}
	for j, x := range sc {
		e := math.Exp(float64(x) - v.MathMax)
		v.MathSum += e
		v.Math = append(v.Math, views.AttnTerm{Key: labels[j], Score: float64(x), Exp: e, W: float64(w[j])})
	}
}

const (
	topN           = 30
	maxRemovedRows = 16
	maxKeptRows    = 24   // survivors listed; the rest are counted
	maxBranches    = 8    // survivors with a "what if?" link
	maxUnits       = 1024 // MLP hidden units drawn
)

// byValueDesc orders indexes by value, largest first, ties by index.
func byValueDesc[T float32](x []T) []int {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case x[a] > x[b]:
			return -1
		case x[a] < x[b]:
			return 1
		}
		return a - b
	})
	return idx
}

func (s *snap) logitsPanel(st *trace.Step, _ trace.Stage) views.Panel {
	l := st.Logits.Logits
	idx := byValueDesc(l)
	n := min(topN, len(l))
	hi, lo := float64(l[idx[0]]), float64(l[idx[len(idx)-1]])
	p := &views.LogitsPanel{Pos: st.Logits.Pos, Rest: len(l) - n, Vocab: len(l)}
	for _, i := range idx[:n] {
		p.Top = append(p.Top, views.Bar{ID: int32(i), Piece: s.piece(int32(i)), Value: float64(l[i]), Width: 100 * (float64(l[i]) - lo) / math.Max(hi-lo, 1e-9)})
	}
	if n < len(idx) {
		p.RestMin, p.RestMax = lo, float64(l[idx[n]])
	}
	p.Lens = s.lensGrid(st)
	return p
}

// softmaxTemperature is the slider's temperature: the sampler's unless the
// viewer moved it; temperature 0 (greedy) is shown at T = 1.
func (s *snap) softmaxTemperature() float64 {
	t := s.View.Temperature
	if t == 0 {
		t = s.Run.Sampler.Temperature
	}
	if t < 0.05 {
		t = 1
	}
	return t
}

func (s *snap) softmaxPanel(st *trace.Step, _ trace.Stage) views.Panel {
	t := s.softmaxTemperature()
	probs := sample.Probabilities(st.Logits.Logits, t)
	idx := byValueDesc(probs)
	n := min(topN, len(probs))
	p := &views.SoftmaxPanel{Temperature: t, RunT: Form(s.Run).Temperature, Greedy: s.Run.Sampler.Temperature <= 0, Vocab: len(probs),
		TopP: s.softmaxTopP(), ChainT: s.chainTemperature(), TempAt: -1}
	p.TLo, p.THi = spec.SliderRange("view_temperature")
	p.PLo, p.PHi = spec.SliderRange("view_top_p")
	var reads topPInput
	kept, err := s.chainKept(st, p.ChainT, p.TopP, &p.Funnel, &reads)
	if err != nil {
		p.ChainErr = err.Error()
	}
	p.TopPReads = reads.what
	p.CutBy, p.CutNote = lastCut(p.Funnel)
	p.Kept, p.Prefix = len(kept), err == nil
	var cum float64
	for k, i := range idx {
		cum += float64(probs[i])
		in := kept[int32(i)]
		if in {
			p.KeptP += float64(probs[i])
		}
		if in != (k < p.Kept) {
			p.Prefix = false // typical-p keeps by surprisal, not by rank
		}
		if k < n {
			tp, ok := reads.cum[int32(i)]
			if !ok {
				tp = -1
			}
			p.Top = append(p.Top, views.Bar{ID: int32(i), Piece: s.piece(int32(i)), Value: float64(probs[i]), Width: 100 * float64(probs[i]),
				Logit: float64(st.Logits.Logits[i]), Cum: cum, Out: err == nil && !in, TopPCum: tp})
		}
	}
	for _, x := range probs {
		p.Sum += float64(x)
	}
	for _, i := range idx[n:] {
		p.RestP += float64(probs[i])
	}
	p.Rest = len(probs) - n
	for i, r := range st.Sampler {
		p.Chain = append(p.Chain, string(r.Step))
		if r.Step == sample.Temperature {
			p.TempAt = i
		}
	}
	p.ZMax, p.Norm = normaliser(st.Logits.Logits, t)
	return p
}

// lastCut names the chain step that made the last cut of the kept set
// (the one the table's cut line marks) and says it in words: its
// setting, and its counts in and out; "" when no step removed a token.
func lastCut(funnel []views.MapFilter) (step, note string) {
	for i := len(funnel) - 1; i >= 0; i-- {
		f := funnel[i]
		if f.Skipped || f.Out >= f.In {
			continue
		}
		note = fmt.Sprintf("%s (%s): %d → %d", f.Name, f.Setting, f.In, f.Out)
		if f.Name == string(sample.Temperature) && f.Out == 1 {
			note += ", greedy: the likeliest token alone is kept"
		}
		return f.Name, note
	}
	return "", ""
}

// chainTemperature is the temperature the softmax panel runs the chain
// at: the slider's once the viewer moved it, else the run's (0: greedy).
func (s *snap) chainTemperature() float64 {
	if s.View.Temperature > 0 {
		return s.View.Temperature
	}
	return s.Run.Sampler.Temperature
}

// chainKept runs the run's own sampler chain (the engine's sampler: the
// run's settings, order and penalty history, with temperature t and
// top-p p) over a step's logits and returns the tokens it keeps for the
// draw; funnel receives each step's counts. It draws from a scratch
// sampler: the run's is untouched.
// topPInput is what the chain's top-p step read: each candidate's running
// sum of probability, most likely first, and in words which distribution
// that was (what is empty when top-p did not run).
type topPInput struct {
	cum  map[int32]float64
	what string
}

// record keeps r's input when r is a top-p step that ran; before are the
// steps that ran ahead of it.
func (in *topPInput) record(r sample.StepResult, before []string, t float64) {
	if r.Step != sample.TopP || r.Skipped {
		return
	}
	c := slices.Clone(r.Before)
	slices.SortStableFunc(c, func(a, b sample.Candidate) int { return cmp.Compare(b.P, a.P) })
	in.cum = make(map[int32]float64, len(c))
	var sum float64
	for _, x := range c {
		sum += float64(x.P)
		in.cum[x.ID] = sum
	}
	in.what = "at T = 1"
	if slices.Contains(before, string(sample.Temperature)) {
		in.what = "at T = " + strconv.FormatFloat(t, 'g', -1, 64)
	}
	if filters := slices.DeleteFunc(slices.Clone(before), func(s string) bool { return s == string(sample.Temperature) }); len(filters) > 0 {
		in.what = fmt.Sprintf("after %s (%d tokens left), renormalised, %s", strings.Join(filters, ", "), len(c), in.what)
	}
}

func (s *snap) chainKept(st *trace.Step, t, p float64, funnel *[]views.MapFilter, reads *topPInput) (map[int32]bool, error) {
	sp := s.Run.Sampler
	sp.Temperature, sp.TopP = t, p
	sp.Seed, sp.SeedSet = 0, true // which tokens are kept does not depend on the draw's number
	smp, err := sample.New(sp)
	if err != nil {
		return nil, fmt.Errorf("the sampler chain at T = %g, top-p = %g: %w", t, p, err)
	}
	smp.Accept(s.historyBefore(st)...)
	kept := map[int32]bool{}
	smp.Sample(st.Logits.Logits, &sample.Observer{
		Step: func(r sample.StepResult) {
			var ran []string
			for _, f := range *funnel {
				rescales := f.Name == string(sample.Temperature) || f.Name == string(sample.Penalties)
				if !f.Skipped && (f.In != f.Out || rescales) { // a step that changed what top-p reads
					ran = append(ran, f.Name)
				}
			}
			reads.record(r, ran, t)
			*funnel = append(*funnel, views.MapFilter{Name: string(r.Step), Setting: chainSetting(s, r.Step, t, p), In: len(r.Before), Out: len(r.After), Skipped: r.Skipped})
		},
		Draw: func(d sample.DrawResult) {
			for _, c := range d.Candidates {
				kept[c.ID] = true
			}
		},
	})
	return kept, nil
}

// chainSetting is a step's setting as chainKept runs it.
func chainSetting(s *snap, step sample.Step, t, p float64) string {
	switch step {
	case sample.Temperature:
		return "T = " + strconv.FormatFloat(t, 'g', -1, 64)
	case sample.TopP:
		return "p = " + strconv.FormatFloat(p, 'g', -1, 64)
	}
	return s.setting(step)
}

// historyBefore is what the run's sampler had accepted (for its
// penalties) when it sampled at step st: the prompt, then each token
// generated before it with what the runtime wrote after it.
func (s *snap) historyBefore(st *trace.Step) []int32 {
	step := slices.Index(s.Cursor.Steps, st)
	h := slices.Clone(s.Prompt)
	for i := range min(s.GenBefore(step), len(s.Gen)) {
		h = append(append(h, s.Gen[i]), s.Inserts[i]...)
	}
	return h
}

// normaliser is the largest logit and Σ exp((z − max)/T): the softmax's
// denominator, as its hover writes it.
func normaliser(z []float32, t float64) (zmax, sum float64) {
	zmax = math.Inf(-1)
	for _, x := range z {
		zmax = max(zmax, float64(x))
	}
	for _, x := range z {
		sum += math.Exp((float64(x) - zmax) / t)
	}
	return zmax, sum
}

// softmaxTopP is the top-p slider's value: the sampler's unless the viewer
// moved it (top-p 1, off, shows the whole vocabulary kept).
func (s *snap) softmaxTopP() float64 {
	if s.View.TopP > 0 {
		return s.View.TopP
	}
	return s.Run.Sampler.TopP
}

func (s *snap) samplerPanel(st *trace.Step, stage trace.Stage) views.Panel {
	i := stage.SamplerStep
	r := st.Sampler[i]
	p := &views.SamplerPanel{Index: i, Count: len(st.Sampler), Name: string(r.Step), Skipped: r.Skipped, Setting: s.setting(r.Step),
		RemovedCount: r.RemovedCount, Before: r.BeforeCount, After: r.AfterCount, TopP: s.Run.Sampler.TopP}
	for j, x := range st.Sampler {
		p.Funnel = append(p.Funnel, views.MapFilter{Name: string(x.Step), Setting: s.setting(x.Step), In: x.BeforeCount, Out: x.AfterCount, Skipped: x.Skipped})
		if x.Step == sample.Temperature {
			p.Temperature, p.AfterTemp = s.setting(x.Step), i > j
		}
	}
	before := s.beforeProbs(st, i)
	step, _ := s.Cursor.Position()
	for k, c := range r.After[:min(len(r.After), maxKeptRows)] {
		b := views.Bar{ID: c.ID, Piece: s.piece(c.ID), Value: float64(c.P), Width: 100 * float64(c.P), Before: lookup(before, c.ID)}
		if k < maxBranches { // "what if?" for the likeliest; each link carries the whole run
			b.Branch = s.branchURL(step, c.ID)
		}
		p.Kept = append(p.Kept, b)
	}
	for _, c := range r.Removed[:min(len(r.Removed), maxRemovedRows)] { // the most likely removed tell the story
		p.Removed = append(p.Removed, views.Bar{ID: c.ID, Piece: s.piece(c.ID), Removed: true, Before: float64(c.P), Width: 100 * float64(c.P)})
	}
	if filters := r.Step != sample.Temperature && r.Step != sample.Penalties; filters && !r.Skipped && len(p.Kept) == r.AfterCount {
		for _, b := range p.Kept {
			p.KeptMass += max(b.Before, 0)
		}
	}
	if r.Step == sample.TopP && !r.Skipped && len(p.Kept) == r.AfterCount {
		p.Cumulative = true // the cut can be checked by hand: kept, then removed, by p going in
		var cum float64
		for _, list := range [][]views.Bar{p.Kept, p.Removed} {
			for k := range list {
				cum += max(list[k].Before, 0)
				list[k].Cum = cum
			}
		}
	}
	return p
}

// beforeProbs is each candidate's probability going into sampler step i:
// the previous step's renormalised probabilities, or the softmax of the
// logits at T = 1 for the first step.
func (s *snap) beforeProbs(st *trace.Step, i int) map[int32]float64 {
	m := map[int32]float64{}
	if i == 0 {
		for id, p := range sample.Probabilities(st.Logits.Logits, 1) {
			m[int32(id)] = float64(p)
		}
		return m
	}
	for _, c := range st.Sampler[i-1].After {
		m[c.ID] = float64(c.P)
	}
	return m
}

// lookup is m[id], or -1 when the trace did not record it.
func lookup(m map[int32]float64, id int32) float64 {
	if v, ok := m[id]; ok {
		return v
	}
	return -1
}

// setting describes a sampler step's setting, as the form shows it.
func (s *snap) setting(step sample.Step) string {
	x := Form(s.Run)
	switch step {
	case sample.Penalties:
		return fmt.Sprintf("repeat %s over the last %s, frequency %s, presence %s", x.RepeatPenalty, x.RepeatLastN, x.FreqPen, x.PresPen)
	case sample.TopK:
		return "k = " + x.TopK
	case sample.TopP:
		return "p = " + x.TopP
	case sample.MinP:
		return "min-p = " + x.MinP
	case sample.TypicalP:
		return "p = " + x.TypicalP
	case sample.Temperature:
		return "T = " + x.Temperature
	}
	return ""
}

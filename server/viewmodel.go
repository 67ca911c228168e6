package server

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"stepthrough/engine/sample"
	"stepthrough/engine/trace"
	"stepthrough/views"
)

// Rows drawn as heat strips at most (each value is a cell with its number
// on hover); a long prompt's earlier rows are counted, not drawn.
const (
	maxEmbedRows = 16
	maxKVRows    = 4
)

// explorer builds the view-model of the session's current view.
func (s *Session) explorer() views.Explorer {
	e := views.Explorer{Error: s.err, Notice: s.notice, Forwards: s.forwards}
	if s.eng != nil {
		e.BackendInfo = s.eng.Backend().String()
	}
	if s.rec == nil || len(s.cur.Steps) == 0 {
		e.End = true
		return e
	}
	step, si := s.cur.Position()
	st, stage := s.cur.Current()
	stages := trace.Stages(st)
	for i, x := range stages {
		e.Stages = append(e.Stages, views.Stage{Index: i, Name: x.Name, Label: label(x), Layer: x.Layer, SamplerStep: x.SamplerStep, Current: i == si, Done: i < si})
	}
	e.Current = e.Stages[si]
	e.Step, e.Steps = step, len(s.cur.Steps)
	e.Seed = strconv.FormatUint(s.smp.Seed(), 10)
	e.URL = query(s.settings, s.smp.Seed(), step, si)
	if s.head > 0 && stage.Name == "attention" { // the head shown travels with the link
		e.URL += "&head=" + strconv.Itoa(s.head)
	}
	e.End = step == len(s.cur.Steps)-1 && si == len(stages)-1 && s.done
	tk := s.m.Tokenizer
	for _, id := range s.gen[:min(len(s.gen), step+1)] {
		e.Generated = append(e.Generated, views.GenToken{ID: id, Bytes: string(tk.Bytes(id))})
	}
	e.Timing = views.Timing{PrefillMS: s.prefillMS, TTFTMS: s.ttftMS, HaveGen: true}
	if len(s.decodeMS) > 0 {
		var sum float64
		for _, d := range s.decodeMS {
			sum += d
		}
		e.Timing.TPOTMS = sum / float64(len(s.decodeMS))
	}
	e.Panel = s.panel(st, stage)
	return e
}

func label(x trace.Stage) string {
	switch x.Name {
	case "attention":
		return fmt.Sprintf("L%d attn", x.Layer+1)
	case "mlp":
		return fmt.Sprintf("L%d MLP", x.Layer+1)
	case "sampler":
		return fmt.Sprintf("sampler %d", x.SamplerStep+1)
	case "kv":
		return "KV append"
	}
	return x.Name
}

// pieces labels every position so far (prompt and generated tokens).
func (s *Session) pieces() []string {
	var all []string
	for _, st := range s.cur.Steps {
		for _, id := range st.Tokens {
			all = append(all, strconv.Quote(string(s.m.Tokenizer.Bytes(id))))
		}
	}
	return all
}

func vecRow(label string, v []float32) views.VecRow {
	var m float32
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x))))
	}
	return views.VecRow{Label: label, Values: v, Max: m}
}

func (s *Session) panel(st *trace.Step, stage trace.Stage) views.Panel {
	tk := s.m.Tokenizer
	piece := func(id int32) string { return strconv.Quote(string(tk.Bytes(id))) }
	labels := s.pieces()
	var p views.Panel
	switch stage.Name {
	case "tokenize":
		t := &views.TokenizePanel{Text: st.Tokenize.Text}
		for _, x := range st.Tokenize.Tokens {
			t.Tokens = append(t.Tokens, views.Token{ID: x.ID, Bytes: strconv.Quote(string(x.Bytes)), Piece: tk.Piece(x.ID), Start: x.Start, End: x.End, Added: x.Added})
		}
		p.Tokenize = t
	case "embed":
		e := &views.EmbedPanel{}
		from := max(0, len(st.Embed.Input)-maxEmbedRows)
		e.NotDrawn = from
		for i, row := range st.Embed.Input[from:] {
			i += from
			e.Rows = append(e.Rows, vecRow(fmt.Sprintf("position %d %s", st.First+i, labels[st.First+i]), row))
		}
		e.PCA, e.PCANote = s.pca(st)
		p.Embed = e
	case "attention":
		p.Attention = s.attention(st, stage.Layer, labels)
	case "mlp":
		L := layerOf(st, stage.Layer)
		last := len(L.MLP.Out) - 1
		m := &views.MLPPanel{Layer: stage.Layer, Kind: L.MLP.Kind}
		if len(L.MLP.Act) > 0 {
			m.Act = vecRow("activation", L.MLP.Act[last])
		}
		if L.ResidAttn != nil && L.ResidMLP != nil {
			m.NormAfterAttn, m.NormAfterMLP = L.ResidAttn.Norms[last], L.ResidMLP.Norms[last]
			if stage.Layer == 0 {
				m.NormBefore = norm(st.Embed.Input[last])
			} else if prev := layerOf(st, stage.Layer-1); prev != nil && prev.ResidMLP != nil {
				m.NormBefore = prev.ResidMLP.Norms[last]
			}
		}
		p.MLP = m
	case "logits":
		p.Logits = s.logits(st, piece)
	case "softmax":
		p.Softmax = s.softmax(st, piece)
	case "sampler":
		p.Sampler = s.samplerStep(st, stage.SamplerStep, piece)
	case "sample":
		sm := st.Sample
		chosen := sm.Candidates[sm.Index]
		sp := &views.SamplePanel{Greedy: sm.Greedy, U: sm.U, Chosen: views.Bar{ID: chosen.ID, Piece: piece(chosen.ID), Value: float64(chosen.P), Chosen: true}}
		from := 0.0
		step, _ := s.cur.Position()
		for i, c := range sm.Candidates {
			sp.CDF = append(sp.CDF, views.CDFBar{ID: c.ID, Piece: piece(c.ID), P: float64(c.P), From: from, To: sm.CDF[i], Chosen: i == sm.Index, Branch: s.branchURL(step, c.ID)})
			from = sm.CDF[i]
		}
		p.Sample = sp
	case "kv":
		k := &views.KVPanel{}
		for _, L := range st.Layers {
			kl := views.KVLayer{Layer: L.Index, Len: L.KVLen}
			from := max(0, len(L.NewK)-maxKVRows) // a long prompt's rows: the last few tell the story
			kl.NotDrawn = from
			for i, row := range L.NewK[from:] {
				kl.NewK = append(kl.NewK, vecRow(fmt.Sprintf("K row, position %d", st.First+from+i), row))
			}
			k.Layers = append(k.Layers, kl)
			k.BytesUsed, k.BytesAlloc, k.Len, k.Capacity = L.KVBytesUsed, L.KVBytesAll, L.KVLen, L.KVCapacity
		}
		k.Saved = st.Pos0
		p.KV = k
	}
	return p
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

func (s *Session) attention(st *trace.Step, l int, labels []string) *views.AttentionPanel {
	L := layerOf(st, l)
	a := L.Attention
	head := min(s.head, a.Heads-1)
	ctx := st.Pos0 + st.N
	v := &views.AttentionPanel{Layer: l, Layers: s.m.Config.Layers, Head: head, Heads: a.Heads, KVHead: head / (a.Heads / a.KVHeads),
		ShowScores: s.scores, First: st.First, KeyLabels: labels[:ctx], Min: float32(math.Inf(1)), Max: float32(math.Inf(-1))}
	src := a.Weights
	if s.scores {
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
	if !s.scores {
		v.Min = 0
	}
	v.Current = len(v.Cells) - 1
	return v
}

const topN = 30

func (s *Session) logits(st *trace.Step, piece func(int32) string) *views.LogitsPanel {
	l := st.Logits.Logits
	idx := make([]int, len(l))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case l[a] > l[b]:
			return -1
		case l[a] < l[b]:
			return 1
		}
		return a - b
	})
	n := min(topN, len(l))
	hi, lo := float64(l[idx[0]]), float64(l[idx[len(idx)-1]])
	p := &views.LogitsPanel{Pos: st.Logits.Pos, Rest: len(l) - n, Vocab: len(l)}
	for _, i := range idx[:n] {
		p.Top = append(p.Top, views.Bar{ID: int32(i), Piece: piece(int32(i)), Value: float64(l[i]), Width: 100 * (float64(l[i]) - lo) / math.Max(hi-lo, 1e-9)})
	}
	if n < len(idx) {
		p.RestMin, p.RestMax = lo, float64(l[idx[n]])
	}
	return p
}

func (s *Session) softmax(st *trace.Step, piece func(int32) string) *views.SoftmaxPanel {
	t := s.viewTemp
	if t < 0.05 {
		t = 1 // temperature 0 means greedy; the distribution is shown at T = 1
	}
	probs := sampleProbabilities(st.Logits.Logits, t)
	idx := make([]int, len(probs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case probs[a] > probs[b]:
			return -1
		case probs[a] < probs[b]:
			return 1
		}
		return a - b
	})
	n := min(topN, len(probs))
	p := &views.SoftmaxPanel{Temperature: t, Vocab: len(probs)}
	top := float64(probs[idx[0]])
	for _, i := range idx[:n] {
		p.Top = append(p.Top, views.Bar{ID: int32(i), Piece: piece(int32(i)), Value: float64(probs[i]), Width: 100 * float64(probs[i]) / top})
	}
	for _, x := range probs {
		p.Sum += float64(x)
	}
	for _, i := range idx[n:] {
		p.RestP += float64(probs[i])
	}
	p.Rest = len(probs) - n
	return p
}

func (s *Session) samplerStep(st *trace.Step, i int, piece func(int32) string) *views.SamplerPanel {
	r := st.Sampler[i]
	p := &views.SamplerPanel{Index: i, Count: len(st.Sampler), Name: string(r.Step), Skipped: r.Skipped, Setting: s.setting(string(r.Step)),
		RemovedCount: r.RemovedCount, Before: r.BeforeCount, After: r.AfterCount}
	var top float64
	for _, c := range r.After {
		top = max(top, float64(c.P))
	}
	step, _ := s.cur.Position()
	for _, c := range r.After {
		p.Kept = append(p.Kept, views.Bar{ID: c.ID, Piece: piece(c.ID), Value: float64(c.P), Width: 100 * float64(c.P) / math.Max(top, 1e-12), Branch: s.branchURL(step, c.ID)})
	}
	for _, c := range r.Removed {
		p.Removed = append(p.Removed, views.Bar{ID: c.ID, Piece: piece(c.ID), Removed: true})
	}
	return p
}

func (s *Session) setting(step string) string {
	x := s.settings
	switch step {
	case "penalties":
		return fmt.Sprintf("repeat %s over the last %s, frequency %s, presence %s", x.RepeatPenalty, x.RepeatLastN, x.FreqPen, x.PresPen)
	case "top-k":
		return "k = " + x.TopK
	case "top-p":
		return "p = " + x.TopP
	case "min-p":
		return "min-p = " + x.MinP
	case "typical-p":
		return "p = " + x.TypicalP
	case "temperature":
		return "T = " + x.Temperature
	}
	return ""
}

// pca projects the input vectors of every position up to st onto their two
// principal components, scaled into [-1, 1].
func (s *Session) pca(st *trace.Step) ([]views.Point, string) {
	labels := s.pieces()
	var rows []trace.Vec
	var names []string
	for _, x := range s.cur.Steps {
		rows = append(rows, x.Embed.Input...)
		for i := range x.Embed.Input {
			names = append(names, labels[x.First+i])
		}
		if x == st {
			break
		}
	}
	if len(rows) < 3 {
		return nil, ""
	}
	d := len(rows[0])
	m := mat.NewDense(len(rows), d, nil)
	for i, r := range rows {
		for j, v := range r {
			m.Set(i, j, float64(v))
		}
	}
	var pc stat.PC
	if !pc.PrincipalComponents(m, nil) {
		return nil, "PCA did not converge"
	}
	var vecs mat.Dense
	pc.VectorsTo(&vecs)
	var proj mat.Dense
	proj.Mul(m, vecs.Slice(0, d, 0, 2))
	var scale float64
	for i := 0; i < len(rows); i++ {
		scale = math.Max(scale, math.Max(math.Abs(proj.At(i, 0)), math.Abs(proj.At(i, 1))))
	}
	vars := pc.VarsTo(nil)
	var total float64
	for _, v := range vars {
		total += v
	}
	var pts []views.Point
	for i := 0; i < len(rows); i++ {
		pts = append(pts, views.Point{Label: names[i], X: proj.At(i, 0) / math.Max(scale, 1e-12), Y: proj.At(i, 1) / math.Max(scale, 1e-12)})
	}
	return pts, fmt.Sprintf("The two directions of largest variance among these %d vectors explain %.0f%% of it.", len(rows), 100*(vars[0]+vars[1])/math.Max(total, 1e-12))
}

var sampleProbabilities = sample.Probabilities

// laneSpec writes the session's sampler settings as a Compare lane, with
// the seed actually used, so the lane reproduces this run.
func (s *Session) laneSpec() string {
	x := s.settings
	return fmt.Sprintf("temperature=%s,top-k=%s,top-p=%s,min-p=%s,typical-p=%s,repeat-penalty=%s,repeat-last-n=%s,frequency-penalty=%s,presence-penalty=%s,seed=%d,order=%s",
		x.Temperature, x.TopK, x.TopP, x.MinP, x.TypicalP, x.RepeatPenalty, x.RepeatLastN, x.FreqPen, x.PresPen, s.smp.Seed(), x.Order)
}

// branchURL opens Compare with this run and a branch that takes the same
// tokens up to step and then token instead.
func (s *Session) branchURL(step int, token int32) string {
	if step >= len(s.gen) {
		return ""
	}
	force := ""
	for _, id := range s.gen[:step] {
		force += strconv.Itoa(int(id)) + ">"
	}
	force += strconv.Itoa(int(token))
	spec := s.laneSpec()
	q := url.Values{"prompt": {s.settings.Prompt}, "model": {s.settings.Model}, "n": {strconv.Itoa(min(s.parsed.maxTokens, 256))},
		"lane": {spec, spec + ",force=" + force}, "step": {strconv.Itoa(step)}}
	return "/compare?" + q.Encode()
}

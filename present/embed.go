package present

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"stepthrough/engine/quant"
	"stepthrough/engine/trace"
	"stepthrough/views"
)

const (
	tableWindow  = 2       // rows of the table drawn each side of the looked-up one
	neighbours   = 2       // nearest table rows shown per prompt token
	maxMapTokens = 8       // prompt tokens placed on the map
	maxTableSize = 4 << 20 // vocabulary × width searched for neighbours (a step stays quick)
)

func (s *snap) embedPanel(st *trace.Step, _ trace.Stage) views.Panel {
	labels := s.pieces(st)
	ids := s.tokenIDs(st)
	c := s.Model.Config
	e := &views.EmbedPanel{Vocab: c.Vocab, Embd: c.Embd}
	rows := min(maxEmbedRows, max(1, stripBudget/max(1, c.Embd)-(2*tableWindow+3))) // the table window and the sum first
	from := max(0, len(st.Embed.Input)-rows)
	e.NotDrawn = from
	for i, row := range st.Embed.Input[from:] {
		i += from
		e.Rows = append(e.Rows, vecRow(fmt.Sprintf("position %d %s", st.First+i, labels[st.First+i]), row))
	}
	last := len(st.Embed.Input) - 1
	e.Pos = st.First + last
	e.ID, e.Piece = ids[e.Pos], labels[e.Pos]
	e.Input = vecRow("input to layer 1", st.Embed.Input[last])
	if last < len(st.Embed.TokenRows) {
		e.TokenRow = vecRow(fmt.Sprintf("row %d of the table", e.ID), st.Embed.TokenRows[last])
	}
	if last < len(st.Embed.PosRows) {
		e.PosRow = vecRow(fmt.Sprintf("position %d's row", e.Pos), st.Embed.PosRows[last])
	}
	for id := max(0, int(e.ID)-tableWindow); id <= min(c.Vocab-1, int(e.ID)+tableWindow); id++ {
		if id == int(e.ID) {
			e.Lit = len(e.Table)
		}
		e.Table = append(e.Table, vecRow(fmt.Sprintf("%d %s", id, s.piece(int32(id))), s.tableRow(int32(id))))
	}
	e.PCA, e.PCANote = s.vocabMap(ids[:e.Pos+1])
	return e
}

// tokenIDs is the token at each position up to step at.
func (s *snap) tokenIDs(at *trace.Step) []int32 {
	var all []int32
	for _, st := range s.Cursor.Steps {
		all = append(all[:min(len(all), st.Pos0)], st.Tokens...)
		if st == at {
			break
		}
	}
	return all
}

// tableRow is row id of the token embedding table, as floats.
func (s *snap) tableRow(id int32) []float32 {
	t := s.Model.Weights.TokEmbd
	row := make([]float32, t.Cols())
	if err := quant.Dequantize(t.Type, t.Row(int(id)), row); err != nil {
		return nil
	}
	return row
}

// vocabMap places the prompt's tokens among their nearest rows of the
// embedding table (cosine similarity) on the table's two directions of
// largest variance among those rows.
func (s *snap) vocabMap(prompt []int32) ([]views.Point, string) {
	c := s.Model.Config
	if c.Vocab*c.Embd > maxTableSize {
		return nil, fmt.Sprintf("The map of the embedding table is drawn for tables up to %d values; this one has %d.", maxTableSize, c.Vocab*c.Embd)
	}
	var ids []int32
	for _, id := range prompt {
		if !slices.Contains(ids, id) && len(ids) < maxMapTokens {
			ids = append(ids, id)
		}
	}
	kind := map[int32]bool{} // true: a prompt token
	order := slices.Clone(ids)
	for _, id := range ids {
		kind[id] = true
	}
	for _, hits := range s.nearest(ids, neighbours) {
		for _, n := range hits {
			if _, ok := kind[n]; !ok {
				kind[n] = false
				order = append(order, n)
			}
		}
	}
	rows := make([][]float32, len(order))
	for i, id := range order {
		rows[i] = s.tableRow(id)
	}
	xy, explained, ok := project2(rows)
	if !ok {
		return nil, "PCA did not converge"
	}
	pts := make([]views.Point, len(order))
	for i, id := range order {
		pts[i] = views.Point{Label: s.piece(id), X: xy[i][0], Y: xy[i][1], Prompt: kind[id]}
	}
	return pts, fmt.Sprintf("%d rows of the %d-row table: the prompt's tokens (filled) and, for each, its %d nearest rows by cosine similarity (hollow), on the two directions of largest variance among them (%.0f%% of it).",
		len(order), c.Vocab, neighbours, 100*explained)
}

func l2(v []float32) float64 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	return math.Sqrt(ss)
}

// nearest is, for each of ids, the k rows of the embedding table most
// similar to its row by cosine similarity, most similar first (itself
// excluded). It reads the table a row at a time.
func (s *snap) nearest(ids []int32, k int) [][]int32 {
	type hit struct {
		id  int32
		cos float64
	}
	q := make([][]float32, len(ids))
	qn := make([]float64, len(ids))
	for i, id := range ids {
		q[i] = s.tableRow(id)
		qn[i] = l2(q[i])
	}
	best := make([][]hit, len(ids))
	t := s.Model.Weights.TokEmbd
	row := make([]float32, t.Cols())
	for j := range s.Model.Config.Vocab {
		if quant.Dequantize(t.Type, t.Row(j), row) != nil {
			return nil
		}
		n := l2(row)
		for i, id := range ids {
			if int32(j) == id || n == 0 || qn[i] == 0 {
				continue
			}
			var dot float64
			for x, v := range row {
				dot += float64(v) * float64(q[i][x])
			}
			h := hit{int32(j), dot / (n * qn[i])}
			if b := best[i]; len(b) < k || h.cos > b[len(b)-1].cos {
				b = append(b, h)
				slices.SortFunc(b, func(a, c hit) int { return cmpDesc(a.cos, c.cos) })
				best[i] = b[:min(len(b), k)]
			}
		}
	}
	out := make([][]int32, len(ids))
	for i, b := range best {
		for _, h := range b {
			out[i] = append(out[i], h.id)
		}
	}
	return out
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// project2 projects rows onto their two principal components, scaled into
// [-1, 1], and reports the share of the variance those two explain.
func project2(rows [][]float32) ([][2]float64, float64, bool) {
	if len(rows) < 3 {
		return nil, 0, false
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
		return nil, 0, false
	}
	var vecs mat.Dense
	pc.VectorsTo(&vecs)
	var proj mat.Dense
	proj.Mul(m, vecs.Slice(0, d, 0, 2))
	var scale float64
	for i := range rows {
		scale = math.Max(scale, math.Max(math.Abs(proj.At(i, 0)), math.Abs(proj.At(i, 1))))
	}
	scale = math.Max(scale, 1e-12)
	vars := pc.VarsTo(nil)
	var total float64
	for _, v := range vars {
		total += v
	}
	out := make([][2]float64, len(rows))
	for i := range rows {
		out[i] = [2]float64{proj.At(i, 0) / scale, proj.At(i, 1) / scale}
	}
	return out, (vars[0] + vars[1]) / math.Max(total, 1e-12), true
}

package cpu

import "stepthrough/engine/model"

// MatMuls computes several products of one input in one dispatch:
// outs[i][t][r] = row r of ws[i] · x[t]. A decode step's Q, K and V (and
// gate and up) then stream their rows as one run per thread and wait for
// each other once, not three times. The matrices must share a row length;
// when they differ in type, or for a prompt chunk (which goes through the
// GEMM), they run one after the other.
func (p *Pool) MatMuls(outs [][]float32, ws []*model.Tensor, x []float32, n int, scratch [][]float32) {
	same := n == 1 && len(ws) <= len(p.multi.parts)
	for _, w := range ws {
		same = same && w.Type == ws[0].Type && w.Cols() == ws[0].Cols()
	}
	if !same {
		p.q8For, p.keepX = nil, true // x is quantized (and rounded) once for all of them
		defer func() { p.keepX, p.q8For = false, nil }()
		for i, w := range ws {
			p.MatMul(outs[i], w, x, n, scratch)
		}
		return
	}
	p.prepare(outs[0], ws[0], x, n, scratch)
	m := &p.multi
	m.n, m.rows = len(ws), 0
	for i, w := range ws {
		m.parts[i] = p.mm
		m.parts[i].w, m.parts[i].out = w, outs[i]
		m.off[i] = m.rows
		m.rows += w.Rows()
	}
	m.off[len(ws)] = m.rows
	p.Run(m.rows, max(16, minWorkPerPart/ws[0].Cols()), m)
	*m = multiTask{}
	p.mm = matmulTask{}
}

// multiTask is MatMuls' work: rows [off[i], off[i+1]) are matrix i's.
type multiTask struct {
	parts   [3]matmulTask
	off     [4]int
	n, rows int
}

func (m *multiTask) Run(worker, lo, hi int) {
	for i := range m.n {
		a, b := max(lo, m.off[i]), min(hi, m.off[i+1])
		if a < b {
			m.parts[i].Run(worker, a-m.off[i], b-m.off[i])
		}
	}
}

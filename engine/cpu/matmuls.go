package cpu

import "stepthrough/engine/model"

// MatMuls computes several products of one input in one dispatch:
// outs[i][t][r] = row r of ws[i] · x[t]. A decode step's Q, K and V (and
// gate and up) then stream their rows as one run per thread and wait for
// each other once, not three times, and x is quantized once. The matrices
// must share a row length and a type (or, several vectors a lane, be
// Q4_K and Q6_K, which read x laid out the same); otherwise, or for
// several vectors not through the int8 kernels, they run one after the
// other.
func (p *Pool) MatMuls(outs [][]float32, ws []*model.Tensor, x []float32, n int, scratch [][]float32) {
	same := len(ws) <= len(p.multi.parts)
	for _, w := range ws {
		alike := w.Type == ws[0].Type || n > 1 && kq8Lanes(w.Type) && kq8Lanes(ws[0].Type)
		same = same && alike && w.Cols() == ws[0].Cols()
	}
	p.q8For, p.keepX = nil, true // x is quantized (and rounded) once for all of them
	defer func() { p.keepX, p.q8For = false, nil }()
	if same {
		p.prepare(outs[0], ws[0], x, n, scratch)
		// several vectors share a dispatch only through the int8 kernels,
		// whose rows come out the same whichever worker's range they fall
		// in (the float kernels group rows by threes from a range's start)
		same = n == 1 || p.mm.z != nil || p.mm.z80 != nil
	}
	if !same {
		for i, w := range ws {
			p.MatMul(outs[i], w, x, n, scratch)
		}
		return
	}
	m := &p.multi
	m.n, m.rows = len(ws), 0
	for i, w := range ws {
		m.parts[i] = p.mm
		m.parts[i].w, m.parts[i].out = w, outs[i]
		if p.mm.sums != nil {
			m.parts[i].sums = blockSums(w)
		}
		if p.mm.z != nil && n > 1 { // K-quants: a matrix past the budget takes the kernel over it, the same results
			m.parts[i].tiles = kTiles(w)
		} else if p.mm.tiles != nil {
			if m.parts[i].tiles = q80Tiles(w); m.parts[i].tiles == nil { // over the budget: x laid out for tiles will not do
				*m, p.mm = multiTask{}, matmulTask{}
				for i, w := range ws {
					p.MatMul(outs[i], w, x, n, scratch)
				}
				return
			}
		}
		m.off[i] = m.rows
		m.rows += w.Rows()
	}
	m.off[len(ws)] = m.rows
	p.Run(m.rows, max(16, minWorkPerPart/(ws[0].Cols()*n)), m)
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

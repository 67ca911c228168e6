package cpu

import (
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// MatMul computes out[t][r] = dot(row r of w, x[t]) for n input vectors.
// x is n×w.Cols(), out is n×w.Rows(). Rows are split across the pool's
// workers; each weight row is decoded once and used for all n vectors.
func (p *Pool) MatMul(out []float32, w *model.Tensor, x []float32, n int, scratch [][]float32) {
	rows, cols := w.Rows(), w.Cols()
	rb := w.RowBytes()
	p.Parallel(rows, 16, func(worker, lo, hi int) {
		buf := scratch[worker][:cols]
		for r := lo; r < hi; r++ {
			raw := w.Data[r*rb : (r+1)*rb]
			if n == 1 {
				out[r] = dotRow(w.Type, raw, x[:cols], buf)
				continue
			}
			rowf := decodeRow(w.Type, raw, buf)
			for t := 0; t < n; t++ {
				out[t*rows+r] = dot(rowf, x[t*cols:(t+1)*cols])
			}
		}
	})
}

// dotRow is one row of a matrix-vector product, in the row's own type where
// a kernel exists, else through a decoded copy.
func dotRow(t quant.Type, raw []byte, x, buf []float32) float32 {
	switch {
	case t == quant.F32 && hostLittleEndian:
		return dot(f32s(raw), x)
	case t == quant.Q8_0:
		return dotQ8_0(raw, x)
	}
	return dot(decodeRow(t, raw, buf), x)
}

// decodeRow returns the row as floats: a view for F32, else decoded into buf.
func decodeRow(t quant.Type, raw []byte, buf []float32) []float32 {
	if t == quant.F32 && hostLittleEndian {
		return f32s(raw)
	}
	quant.Dequantize(t, raw, buf) // sizes were checked when the model loaded
	return buf
}

// RowF32 decodes row r of a tensor (an embedding lookup) into dst.
func RowF32(w *model.Tensor, r int, dst []float32) {
	copy(dst, decodeRow(w.Type, w.Row(r), dst))
}

// Package train trains the lesson models: a GPT-2 (LayerNorm, learned
// positions, fused QKV, GELU, tied output) or a Qwen3 (RMSNorm, Q/K norms,
// NEOX RoPE, SwiGLU, tied output) with explicit forward and backward
// passes, cross-entropy loss, AdamW with warm-up and cosine decay,
// gradient clipping, checkpoints, and export to GGUF with the keys and
// tensor names llama.cpp expects for each family. Every backward op is checked
// against finite differences (ops_test.go). Matrix products reuse the
// engine's CPU kernels.
package train

import (
	"math"
	"unsafe"

	"stepthrough/engine/cpu"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// mm holds the thread pool and scratch for matrix products.
type mm struct {
	pool    *cpu.Pool
	scratch [][]float32
	tbuf    []float32
	part    []float32
	rowLoss []float64
	attn    []attnScratch
}

func newMM(threads, maxCols int) *mm {
	p := cpu.NewPool(threads)
	m := &mm{pool: p}
	for i := 0; i < p.Threads(); i++ {
		m.scratch = append(m.scratch, make([]float32, cpu.ScratchFloats(maxCols)))
	}
	return m
}

func (m *mm) grow(cols int) {
	if len(m.scratch[0]) < cpu.ScratchFloats(cols) {
		for i := range m.scratch {
			m.scratch[i] = make([]float32, cpu.ScratchFloats(cols))
		}
	}
}

func bytesOf(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
}

// abt computes out[n×m] = a[n×k] · b[m×k]ᵀ.
func (m *mm) abt(out, a, b []float32, n, k, rows int) {
	m.grow(k)
	t := &model.Tensor{Type: quant.F32, Dims: []int{k, rows}, Data: bytesOf(b[:rows*k])}
	m.pool.MatMul(out[:n*rows], t, a[:n*k], n, m.scratch)
}

// transpose writes the [cols×rows] transpose of x[rows×cols] into dst.
func transpose(dst, x []float32, rows, cols int) { transposeRows(dst, x, rows, cols, 0, rows) }

// transposeRows transposes rows [lo, hi) of x[rows×cols] into dst: 8×8
// blocks, each destination row written as one run of eight (12× faster
// than 32×32 blocks on power-of-two shapes, whose strides alias in cache).
func transposeRows(dst, x []float32, rows, cols, lo, hi int) {
	r := lo
	for ; r+8 <= hi; r += 8 {
		c := 0
		for ; c+8 <= cols; c += 8 {
			for cc := c; cc < c+8; cc++ {
				d := dst[cc*rows+r : cc*rows+r+8]
				d[0], d[1], d[2], d[3] = x[r*cols+cc], x[(r+1)*cols+cc], x[(r+2)*cols+cc], x[(r+3)*cols+cc]
				d[4], d[5], d[6], d[7] = x[(r+4)*cols+cc], x[(r+5)*cols+cc], x[(r+6)*cols+cc], x[(r+7)*cols+cc]
			}
		}
		for ; c < cols; c++ {
			for rr := r; rr < r+8; rr++ {
				dst[c*rows+rr] = x[rr*cols+c]
			}
		}
	}
	for ; r < hi; r++ {
		for c := 0; c < cols; c++ {
			dst[c*rows+r] = x[r*cols+c]
		}
	}
}

// transposePar is transpose split by blocks of eight rows across the pool.
func (m *mm) transposePar(dst, x []float32, rows, cols int) {
	m.pool.Parallel((rows+7)/8, 16, func(_, lo, hi int) {
		transposeRows(dst, x, rows, cols, lo*8, min(hi*8, rows))
	})
}

// each runs fn(i) for i in [0, n), split across the pool.
func (m *mm) each(n int, fn func(i int)) {
	m.pool.Parallel(n, 4096, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			fn(i)
		}
	})
}

func (m *mm) tmp(n int) []float32 {
	if cap(m.tbuf) < n {
		m.tbuf = make([]float32, n)
	}
	return m.tbuf[:n]
}

// linear: y[n×out] = x[n×in] · Wᵀ + b, with W [out×in].
func (m *mm) linear(y, x, w, b []float32, n, in, out int) {
	m.abt(y, x, w, n, in, out)
	if b != nil {
		for t := 0; t < n; t++ {
			row := y[t*out : (t+1)*out]
			for i := range row {
				row[i] += b[i]
			}
		}
	}
}

// linearBack accumulates dW += dyᵀ·x and db += Σ dy, and writes dx = dy·W
// (when dx is not nil).
func (m *mm) linearBack(dx, dw, db, dy, x, w []float32, n, in, out int, xT, dyT []float32) {
	if dx != nil {
		wT := m.tmp(in * out)
		m.transposePar(wT, w, out, in) // [in×out]
		m.abt(dx, dy, wT, n, out, in)
	}
	m.transposePar(dyT, dy, n, out) // [out×n]
	m.transposePar(xT, x, n, in)    // [in×n]
	if cap(m.part) < out*in {
		m.part = make([]float32, out*in)
	}
	part := m.part[:out*in]
	m.abt(part, dyT, xT, out, n, in)
	for i, v := range part {
		dw[i] += v
	}
	if db != nil {
		for t := 0; t < n; t++ {
			for i, v := range dy[t*out : (t+1)*out] {
				db[i] += v
			}
		}
	}
}

// layerNorm: y = (x-mean)/sqrt(var+eps)*g + b per row; keeps mean and rstd.
func layerNorm(y, mean, rstd, x, g, b []float32, n, d int, eps float32) {
	for t := 0; t < n; t++ {
		row := x[t*d : (t+1)*d]
		var s float64
		for _, v := range row {
			s += float64(v)
		}
		mu := float32(s / float64(d))
		var sq float64
		for _, v := range row {
			sq += float64((v - mu) * (v - mu))
		}
		rs := float32(1 / math.Sqrt(sq/float64(d)+float64(eps)))
		mean[t], rstd[t] = mu, rs
		out := y[t*d : (t+1)*d]
		for i, v := range row {
			out[i] = (v-mu)*rs*g[i] + b[i]
		}
	}
}

// layerNormBack accumulates dg, db and adds the input gradient into dx.
func layerNormBack(dx, dg, db, dy, x, mean, rstd, g []float32, n, d int) {
	for t := 0; t < n; t++ {
		row, dyr, dxr := x[t*d:(t+1)*d], dy[t*d:(t+1)*d], dx[t*d:(t+1)*d]
		mu, rs := mean[t], rstd[t]
		var sumDn, sumDnX float64
		for i, v := range row {
			xh := (v - mu) * rs
			dn := dyr[i] * g[i]
			sumDn += float64(dn)
			sumDnX += float64(dn * xh)
			dg[i] += dyr[i] * xh
			db[i] += dyr[i]
		}
		mDn, mDnX := float32(sumDn/float64(d)), float32(sumDnX/float64(d))
		for i, v := range row {
			xh := (v - mu) * rs
			dxr[i] += rs * (dyr[i]*g[i] - mDn - xh*mDnX)
		}
	}
}

const geluC = 0.7978845608028654

func gelu(x float32) float32 { return cpu.GELU(x) }

func geluGrad(x float32) float32 {
	u := geluC * (x + 0.044715*x*x*x)
	th := float32(math.Tanh(float64(u)))
	du := geluC * (1 + 3*0.044715*x*x)
	return 0.5*(1+th) + 0.5*x*(1-th*th)*du
}

// attnScratch is one worker's buffers for attention: two T×T matrices and
// three head-sized transposes.
type attnScratch struct{ s1, s2, t1, t2, t3 []float32 }

func (m *mm) attnScratch(T, D int) []attnScratch {
	if len(m.attn) == 0 || len(m.attn[0].s1) < T*T || len(m.attn[0].t1) < D*T {
		m.attn = make([]attnScratch, m.pool.Threads())
		for i := range m.attn {
			f := func(n int) []float32 { return make([]float32, n) }
			m.attn[i] = attnScratch{f(T * T), f(T * T), f(D * T), f(D * T), f(D * T)}
		}
	}
	return m.attn
}

// tile is the row block the causal products work in: rows [i0, i0+tile)
// need keys [0, i0+tile) only.
const tile = 4

// headT writes the [D×T] transpose of one head's rows (stride ld) into dst.
func headT(dst, x []float32, ld, T, D int) {
	for j := 0; j < T; j++ {
		row := x[j*ld : j*ld+D]
		for d, v := range row {
			dst[d*T+j] = v
		}
	}
}

// attention over B sequences of T positions with H heads of D values:
// qkv [B·T×3E] rows [q|k|v]; out [B·T×E]; probs [B×H×T×T] kept for backward.
// The products run on the engine's tile kernels, causally by row blocks.
func (m *mm) attention(out, probs, qkv []float32, B, T, H, D int) {
	E, ld := H*D, 3*H*D
	scale := float32(1 / math.Sqrt(float64(D)))
	scr := m.attnScratch(T, D)
	m.pool.Parallel(B*H, 1, func(w, lo, hi int) {
		vT := scr[w].t1
		for bh := lo; bh < hi; bh++ {
			b, h := bh/H, bh%H
			base := b * T * ld
			q, k, v := qkv[base+h*D:], qkv[base+E+h*D:], qkv[base+2*E+h*D:]
			P := probs[bh*T*T : (bh+1)*T*T]
			for i0 := 0; i0 < T; i0 += tile {
				cpu.GemmABT(P[i0*T:], T, q[i0*ld:], ld, k, ld, min(tile, T-i0), min(T, i0+tile), D)
			}
			for i := 0; i < T; i++ {
				softmaxCausal(P[i*T:(i+1)*T], i, scale)
			}
			headT(vT, v, ld, T, D)
			o := out[b*T*E+h*D:]
			for i0 := 0; i0 < T; i0 += tile {
				cpu.GemmABT(o[i0*E:], E, P[i0*T:], T, vT, T, min(tile, T-i0), D, min(T, i0+tile))
			}
		}
	})
}

// softmaxCausal turns row's scores for keys 0..i into probabilities (after
// scaling) and zeroes the keys after i.
func softmaxCausal(row []float32, i int, scale float32) {
	mx := float32(math.Inf(-1))
	for j := 0; j <= i; j++ {
		row[j] *= scale
		mx = max(mx, row[j])
	}
	var sum float32
	for j := 0; j <= i; j++ {
		row[j] = expNeg(row[j] - mx)
		sum += row[j]
	}
	inv := 1 / sum
	for j := 0; j <= i; j++ {
		row[j] *= inv
	}
	clear(row[i+1:])
}

// attentionBack writes the gradient of qkv given dout (each element of dqkv
// is written once).
func (m *mm) attentionBack(dqkv, dout, probs, qkv []float32, B, T, H, D int) {
	E, ld := H*D, 3*H*D
	scale := float32(1 / math.Sqrt(float64(D)))
	scr := m.attnScratch(T, D)
	m.pool.Parallel(B*H, 1, func(w, lo, hi int) {
		s := scr[w]
		dS, PT, doT, kT, qT := s.s1[:T*T], s.s2[:T*T], s.t1, s.t2, s.t3
		for bh := lo; bh < hi; bh++ {
			b, h := bh/H, bh%H
			base := b * T * ld
			q, k, v := qkv[base+h*D:], qkv[base+E+h*D:], qkv[base+2*E+h*D:]
			dq, dk, dv := dqkv[base+h*D:], dqkv[base+E+h*D:], dqkv[base+2*E+h*D:]
			do := dout[b*T*E+h*D:]
			P := probs[bh*T*T : (bh+1)*T*T]
			// dP = dO·Vᵀ, then dS = P∘(dP − Σ P∘dP)·scale
			for i0 := 0; i0 < T; i0 += tile {
				cpu.GemmABT(dS[i0*T:], T, do[i0*E:], E, v, ld, min(tile, T-i0), min(T, i0+tile), D)
			}
			for i := 0; i < T; i++ {
				p, d := P[i*T:i*T+i+1], dS[i*T:(i+1)*T]
				var dot float32
				for j, pj := range p {
					dot += pj * d[j]
				}
				for j, pj := range p {
					d[j] = pj * (d[j] - dot) * scale
				}
				clear(d[i+1:])
			}
			// dV = Pᵀ·dO; rows j need queries i ≥ j only
			transpose(PT, P, T, T)
			headT(doT, do, E, T, D)
			for j0 := 0; j0 < T; j0 += tile {
				cpu.GemmABT(dv[j0*ld:], ld, PT[j0*T+j0:], T, doT[j0:], T, min(tile, T-j0), D, T-j0)
			}
			// dQ = dS·K
			headT(kT, k, ld, T, D)
			for i0 := 0; i0 < T; i0 += tile {
				cpu.GemmABT(dq[i0*ld:], ld, dS[i0*T:], T, kT, T, min(tile, T-i0), D, min(T, i0+tile))
			}
			// dK = dSᵀ·Q
			transpose(PT, dS, T, T)
			headT(qT, q, ld, T, D)
			for j0 := 0; j0 < T; j0 += tile {
				cpu.GemmABT(dk[j0*ld:], ld, PT[j0*T+j0:], T, qT[j0:], T, min(tile, T-j0), D, T-j0)
			}
		}
	})
}

// crossEntropy returns the mean loss over the rows whose target is not
// negative and writes dlogits (softmax - onehot)/n for them, where n counts
// them (0 for the others). Rows are split across the pool; the loss is
// summed in row order, so it does not depend on the split.
func (m *mm) crossEntropy(dlogits, logits []float32, targets []int32, n, V int) float64 {
	if cap(m.rowLoss) < n {
		m.rowLoss = make([]float64, n)
	}
	rl := m.rowLoss[:n]
	counted := 0
	for _, t := range targets[:n] {
		if t >= 0 {
			counted++
		}
	}
	if counted == 0 {
		if dlogits != nil {
			clear(dlogits[:n*V])
		}
		return 0
	}
	m.pool.Parallel(n, 16, func(_, lo, hi int) {
		for t := lo; t < hi; t++ {
			rl[t] = rowLoss(dlogits, logits, targets[t], t, V, counted)
		}
	})
	var loss float64
	for _, v := range rl {
		loss += v
	}
	return loss / float64(counted)
}

// rowLoss is row t's cross-entropy against target and, when dlogits is not
// nil, writes its gradient (softmax - onehot)/n; a negative target counts
// nothing.
func rowLoss(dlogits, logits []float32, target int32, t, V, n int) float64 {
	if target < 0 {
		if dlogits != nil {
			clear(dlogits[t*V : (t+1)*V])
		}
		return 0
	}
	row := logits[t*V : (t+1)*V]
	mx := float32(math.Inf(-1))
	for _, v := range row {
		mx = max(mx, v)
	}
	var sum float64
	for _, v := range row {
		sum += math.Exp(float64(v - mx))
	}
	lse := float64(mx) + math.Log(sum)
	if dlogits != nil {
		d := dlogits[t*V : (t+1)*V]
		for i, v := range row {
			d[i] = float32(math.Exp(float64(v)-lse)) / float32(n)
		}
		d[target] -= 1 / float32(n)
	}
	return lse - float64(row[target])
}

// expNeg is e^x for x ≤ 0 in float32, within 2 ulp of math.Exp (tested):
// x = n·ln2 + r with |r| ≤ ln2/2, a degree-6 polynomial for e^r, and n put
// into the exponent. Softmax over T² attention scores is dominated by exp,
// and float64 math.Exp costs several times more.
func expNeg(x float32) float32 {
	if x < -87 {
		return 0
	}
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	n := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - n*ln2hi - n*ln2lo
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	e := p*r*r + r + 1
	return e * math.Float32frombits(uint32(int32(n)+127)<<23)
}

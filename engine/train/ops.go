// Package train trains the lesson model: a GPT-2 (LayerNorm, learned
// positions, fused QKV, GELU, tied output) with explicit forward and
// backward passes, cross-entropy loss, AdamW with warm-up and cosine
// decay, gradient clipping, checkpoints, and export to GGUF with the gpt2
// keys and tensor names llama.cpp expects. Every backward op is checked
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
func transpose(dst, x []float32, rows, cols int) {
	const blk = 32
	for r0 := 0; r0 < rows; r0 += blk {
		for c0 := 0; c0 < cols; c0 += blk {
			for r := r0; r < min(r0+blk, rows); r++ {
				for c := c0; c < min(c0+blk, cols); c++ {
					dst[c*rows+r] = x[r*cols+c]
				}
			}
		}
	}
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
		transpose(wT, w, out, in) // [in×out]
		m.abt(dx, dy, wT, n, out, in)
	}
	transpose(dyT, dy, n, out) // [out×n]
	transpose(xT, x, n, in)    // [in×n]
	part := make([]float32, out*in)
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

// attention over B sequences of T positions with H heads of D values:
// qkv [B·T×3E] rows [q|k|v]; out [B·T×E]; probs [B×H×T×T] kept for backward.
func attention(pool *cpu.Pool, out, probs, qkv []float32, B, T, H, D int) {
	E := H * D
	scale := float32(1 / math.Sqrt(float64(D)))
	pool.Parallel(B*H, 1, func(_, lo, hi int) {
		for bh := lo; bh < hi; bh++ {
			b, h := bh/H, bh%H
			P := probs[((b*H)+h)*T*T:]
			for i := 0; i < T; i++ {
				q := qkv[(b*T+i)*3*E+h*D:]
				row := P[i*T : (i+1)*T]
				mx := float32(math.Inf(-1))
				for j := 0; j <= i; j++ {
					k := qkv[(b*T+j)*3*E+E+h*D:]
					var s float32
					for d := 0; d < D; d++ {
						s += q[d] * k[d]
					}
					row[j] = s * scale
					mx = max(mx, row[j])
				}
				var sum float32
				for j := 0; j <= i; j++ {
					row[j] = float32(math.Exp(float64(row[j] - mx)))
					sum += row[j]
				}
				for j := 0; j <= i; j++ {
					row[j] /= sum
				}
				for j := i + 1; j < T; j++ {
					row[j] = 0
				}
				o := out[(b*T+i)*E+h*D : (b*T+i)*E+h*D+D]
				clear(o)
				for j := 0; j <= i; j++ {
					v := qkv[(b*T+j)*3*E+2*E+h*D:]
					p := row[j]
					for d := 0; d < D; d++ {
						o[d] += p * v[d]
					}
				}
			}
		}
	})
}

// attentionBack adds the gradient of qkv given dout.
func attentionBack(pool *cpu.Pool, dqkv, dout, probs, qkv []float32, B, T, H, D int) {
	E := H * D
	scale := float32(1 / math.Sqrt(float64(D)))
	pool.Parallel(B*H, 1, func(_, lo, hi int) {
		dp := make([]float32, T)
		for bh := lo; bh < hi; bh++ {
			b, h := bh/H, bh%H
			P := probs[((b*H)+h)*T*T:]
			for i := 0; i < T; i++ {
				do := dout[(b*T+i)*E+h*D : (b*T+i)*E+h*D+D]
				row := P[i*T : (i+1)*T]
				// dP = do·v ; dv += p·do
				var dot float32
				for j := 0; j <= i; j++ {
					v := qkv[(b*T+j)*3*E+2*E+h*D:]
					dv := dqkv[(b*T+j)*3*E+2*E+h*D:]
					var s float32
					for d := 0; d < D; d++ {
						s += do[d] * v[d]
						dv[d] += row[j] * do[d]
					}
					dp[j] = s
					dot += s * row[j]
				}
				// softmax back: dS = p*(dP - Σ p dP), then through the scale
				q := qkv[(b*T+i)*3*E+h*D:]
				dq := dqkv[(b*T+i)*3*E+h*D:]
				for j := 0; j <= i; j++ {
					ds := row[j] * (dp[j] - dot) * scale
					k := qkv[(b*T+j)*3*E+E+h*D:]
					dk := dqkv[(b*T+j)*3*E+E+h*D:]
					for d := 0; d < D; d++ {
						dq[d] += ds * k[d]
						dk[d] += ds * q[d]
					}
				}
			}
		}
	})
}

// crossEntropy returns the mean loss and writes dlogits (softmax - onehot)/n.
func crossEntropy(dlogits, logits []float32, targets []int32, n, V int) float64 {
	var loss float64
	for t := 0; t < n; t++ {
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
		loss += lse - float64(row[targets[t]])
		if dlogits != nil {
			d := dlogits[t*V : (t+1)*V]
			for i, v := range row {
				d[i] = float32(math.Exp(float64(v)-lse)) / float32(n)
			}
			d[targets[t]] -= 1 / float32(n)
		}
	}
	return loss / float64(n)
}

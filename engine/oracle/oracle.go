// Package oracle is an independent float64 forward pass of every family,
// written for clarity from the papers' and llama.cpp's definitions (not
// from the backends' runners): the oracle the backends' tests and the
// quantization lens's tests compare with. It reads the hyperparameters
// from the Config and applies every feature a Spec declares, over the
// weights dequantized to float64.
package oracle

import (
	"math"

	"stepthrough/engine/intervene"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// Forward is the logits of every position of ids, one row per position.
func Forward(m *model.Model, ids []int32) [][]float64 { return Edited(m, ids, nil, nil) }

// Edited is Forward with edits applied by hand where each site
// is computed (a head's slice of the attention output, a unit of the MLP
// activation, a sublayer's output, the residual stream after a layer);
// after, when set, sees the residual stream after each layer.
func Edited(m *model.Model, ids []int32, set *intervene.Set, after func(l, p int, x []float64)) [][]float64 {
	c, W, spec := m.Config, m.Weights, m.Spec
	edit := func(l, p int, site intervene.Site, v []float64) {
		if set == nil {
			return
		}
		for _, e := range set.Edits {
			if e.Layer != l || e.Site != site || e.Pos >= 0 && e.Pos != p {
				continue
			}
			lo, w := 0, len(v)
			switch site {
			case intervene.Head:
				lo, w = e.Index*c.HeadDim, c.HeadDim
			case intervene.Unit:
				lo, w = e.Index, 1
			}
			for j := lo; j < lo+w; j++ {
				switch e.Op {
				case intervene.Zero:
					v[j] = 0
				case intervene.Scale:
					v[j] *= float64(e.Factor)
				case intervene.Replace:
					v[j] = float64(e.Vector[j-lo])
				case intervene.Add:
					v[j] += float64(e.Factor) * float64(e.Vector[j-lo])
				}
			}
		}
	}
	emb, pos := mat64(W.TokEmbd), mat64(W.PosEmbd)
	keys := make([][][]float64, c.Layers) // [layer][position]
	vals := make([][][]float64, c.Layers)
	var logits [][]float64
	for p, id := range ids {
		x := append([]float64(nil), emb[id]...)
		if spec.EmbedScale {
			s := math.Sqrt(float64(c.Embd))
			for i := range x {
				x[i] *= s
			}
		}
		if pos != nil {
			for i := range x {
				x[i] += pos[p][i]
			}
		}
		for l := range W.Layers {
			L := &W.Layers[l]
			xn := norm64(spec, c, x, vec64(L.AttnNorm), vec64(L.AttnNormB))
			var q, k, v []float64
			if L.QKV != nil {
				qkv := matVec64(mat64(L.QKV), vec64(L.QKVB), in64(L.QKV, xn))
				q, k, v = qkv[:c.QDim()], qkv[c.QDim():c.QDim()+c.KVDim()], qkv[c.QDim()+c.KVDim():]
			} else {
				q, k, v = matVec64(mat64(L.Q), vec64(L.QB), in64(L.Q, xn)), matVec64(mat64(L.K), vec64(L.KB), in64(L.K, xn)), matVec64(mat64(L.V), vec64(L.VB), in64(L.V, xn))
			}
			if L.QNorm != nil {
				headRMS64(q, vec64(L.QNorm), c.NormEps)
				headRMS64(k, vec64(L.KNorm), c.NormEps)
			}
			if spec.Rope != model.RopeNone {
				rp := c.RopeFor(l)
				factors := vec64(W.RopeFactors(c, min(c.ContextLen, 2048)))
				rope64(q, p, c, rp, factors, spec.Rope == model.RopeNeoX)
				rope64(k, p, c, rp, factors, spec.Rope == model.RopeNeoX)
			}
			keys[l] = append(keys[l], k)
			vals[l] = append(vals[l], v)
			first := 0
			if c.IsLocal(l) {
				first = max(0, p-c.Window+1)
			}
			att := attend64(c, q, keys[l][first:], vals[l][first:])
			edit(l, p, intervene.Head, att)
			o := matVec64(mat64(L.Out), vec64(L.OutB), in64(L.Out, att))
			if L.PostNorm != nil {
				o = norm64(spec, c, o, vec64(L.PostNorm), nil)
			}
			edit(l, p, intervene.Attn, o)
			for i := range x {
				x[i] += o[i]
			}
			xn = norm64(spec, c, x, vec64(L.FFNNorm), vec64(L.FFNNormB))
			act := mlp64(spec, c, L, xn)
			edit(l, p, intervene.Unit, act)
			d := matVec64(mat64(L.Down), vec64(L.DownB), in64(L.Down, act))
			if L.FFNPost != nil {
				d = norm64(spec, c, d, vec64(L.FFNPost), nil)
			}
			edit(l, p, intervene.MLP, d)
			for i := range x {
				x[i] += d[i]
			}
			edit(l, p, intervene.Resid, x)
			if after != nil {
				after(l, p, x)
			}
		}
		logits = append(logits, Output(m, x))
	}
	return logits
}

func mat64(t *model.Tensor) [][]float64 {
	if t == nil {
		return nil
	}
	f := make([]float32, t.Rows()*t.Cols())
	quant.Dequantize(t.Type, t.Data, f)
	out := make([][]float64, t.Rows())
	for r := range out {
		out[r] = make([]float64, t.Cols())
		for j := range out[r] {
			out[r][j] = float64(f[r*t.Cols()+j])
		}
	}
	return out
}

func vec64(t *model.Tensor) []float64 {
	if t == nil {
		return nil
	}
	return mat64(t)[0]
}

// in64 is x as a product with rows of t reads it, from x in float32 as
// the engine holds it (llama.cpp's rounding): for Q4_0, Q5_0 and Q8_0 rows
// rounded to Q8_0 blocks (per 32 values, d = max|x|/127 in binary16);
// for Q4_K, Q5_K and Q6_K rows to Q8_K blocks (per 256 values, d =
// max|x|/127 in float32); the values x·127/max to the nearest integer,
// halves to even. Else x.
func in64(t *model.Tensor, x []float64) []float64 {
	block, f16 := 0, false
	switch t.Type {
	case quant.Q8_0, quant.Q5_0, quant.Q4_0:
		block, f16 = 32, true
	case quant.Q4_K, quant.Q5_K, quant.Q6_K:
		block = 256
	}
	if block == 0 || len(x)%block != 0 {
		return x
	}
	out := make([]float64, len(x))
	for b := 0; b < len(x); b += block {
		var amax float32
		for _, v := range x[b : b+block] {
			amax = max(amax, float32(math.Abs(v)))
		}
		if amax == 0 {
			continue
		}
		d, id := float64(amax/127), 127/amax
		if f16 {
			d = float64(quant.F16ToF32(quant.F32ToF16(amax / 127)))
		}
		for i, v := range x[b : b+block] {
			out[b+i] = d * math.RoundToEven(float64(float32(v)*id))
		}
	}
	return out
}

func matVec64(w [][]float64, b []float64, x []float64) []float64 {
	y := make([]float64, len(w))
	for r := range w {
		for j, v := range w[r] {
			y[r] += v * x[j]
		}
		if b != nil {
			y[r] += b[r]
		}
	}
	return y
}

func norm64(spec *model.Spec, c *model.Config, x, w, b []float64) []float64 {
	n := float64(len(x))
	y := make([]float64, len(x))
	if spec.Norm == model.RMSNorm {
		var ss float64
		for _, v := range x {
			ss += v * v
		}
		s := 1 / math.Sqrt(ss/n+float64(c.NormEps))
		for i := range x {
			y[i] = x[i] * s * w[i]
		}
		return y
	}
	var mean, vr float64
	for _, v := range x {
		mean += v / n
	}
	for _, v := range x {
		vr += (v - mean) * (v - mean) / n
	}
	s := 1 / math.Sqrt(vr+float64(c.NormEps))
	for i := range x {
		y[i] = (x[i]-mean)*s*w[i] + b[i]
	}
	return y
}

// headRMS64 RMS-normalises each head of x in place with weight w.
func headRMS64(x, w []float64, eps float32) {
	hd := len(w)
	for h := 0; h < len(x)/hd; h++ {
		v := x[h*hd : (h+1)*hd]
		var ss float64
		for _, e := range v {
			ss += e * e
		}
		s := 1 / math.Sqrt(ss/float64(hd)+float64(eps))
		for i := range v {
			v[i] *= s * w[i]
		}
	}
}

// rope64 rotates each head's first RopeDims values: pair i (adjacent
// values, or i and i+dims/2 in NEOX) by θ = pos·base^(−2i/dims)/factor_i,
// interpolated and ramped as YaRN defines it, cos and sin scaled by the
// attention factor.
func rope64(x []float64, pos int, c *model.Config, rp *model.RopeParams, factors []float64, neox bool) {
	hd, dims := c.HeadDim, c.RopeDims
	for h := 0; h < len(x)/hd; h++ {
		for i := 0; i < dims/2; i++ {
			extrap := float64(pos) * math.Pow(float64(rp.Base), -2*float64(i)/float64(dims))
			if factors != nil {
				extrap /= factors[i]
			}
			theta, mscale := float64(rp.FreqScale)*extrap, float64(rp.AttnFactor)
			if rp.ExtFactor != 0 {
				y := (float64(i) - float64(rp.Corr[0])) / math.Max(0.001, float64(rp.Corr[1]-rp.Corr[0]))
				ramp := (1 - math.Min(1, math.Max(0, y))) * float64(rp.ExtFactor)
				theta = theta*(1-ramp) + extrap*ramp
				mscale *= 1 + 0.1*math.Log(1/float64(rp.FreqScale))
			}
			a, b := h*hd+2*i, h*hd+2*i+1
			if neox {
				a, b = h*hd+i, h*hd+i+dims/2
			}
			x0, x1 := x[a], x[b]
			cs, sn := math.Cos(theta)*mscale, math.Sin(theta)*mscale
			x[a], x[b] = x0*cs-x1*sn, x0*sn+x1*cs
		}
	}
}

func cap64(v, cap float64) float64 { return cap * math.Tanh(v/cap) }

// attend64 is every head's softmax(q·Kᵀ·scale, soft-capped) · V over the
// visible keys.
func attend64(c *model.Config, q []float64, keys, vals [][]float64) []float64 {
	hd := c.HeadDim
	att := make([]float64, c.QDim())
	for h := 0; h < c.Heads; h++ {
		kh := h / (c.Heads / c.KVHeads)
		sc := make([]float64, len(keys))
		mx := math.Inf(-1)
		for j := range keys {
			for i := 0; i < hd; i++ {
				sc[j] += q[h*hd+i] * keys[j][kh*hd+i]
			}
			sc[j] *= float64(c.AttnScale)
			if c.AttnSoftcap != 0 {
				sc[j] = cap64(sc[j], float64(c.AttnSoftcap))
			}
			mx = math.Max(mx, sc[j])
		}
		var sum float64
		for j := range sc {
			sc[j] = math.Exp(sc[j] - mx)
			sum += sc[j]
		}
		for j := range sc {
			for i := 0; i < hd; i++ {
				att[h*hd+i] += sc[j] / sum * vals[j][kh*hd+i]
			}
		}
	}
	return att
}

func gelu64(z float64) float64 {
	return 0.5 * z * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(z+0.044715*z*z*z)))
}

// mlp64 is the feed-forward block's hidden activations.
func mlp64(spec *model.Spec, c *model.Config, L *model.Layer, xn []float64) []float64 {
	switch spec.FFN {
	case model.GELU:
		h := matVec64(mat64(L.Up), vec64(L.UpB), in64(L.Up, xn))
		for i, z := range h {
			h[i] = gelu64(z)
		}
		return h
	case model.SwiGLUFused:
		both := matVec64(mat64(L.Up), nil, in64(L.Up, xn))
		g, u := both[:c.FFN], both[c.FFN:]
		for i := range g {
			g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
		}
		return g
	}
	g, u := matVec64(mat64(L.Gate), vec64(L.GateB), in64(L.Gate, xn)), matVec64(mat64(L.Up), vec64(L.UpB), in64(L.Up, xn))
	for i := range g {
		if spec.FFN == model.GeGLU {
			g[i] = gelu64(g[i]) * u[i]
		} else {
			g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
		}
	}
	return g
}

// Output is the model's final norm, output projection and soft cap of
// a residual stream row.
func Output(m *model.Model, x []float64) []float64 {
	c, W := m.Config, m.Weights
	out := matVec64(mat64(W.OutputMatrix()), vec64(W.OutputB), in64(W.OutputMatrix(), norm64(m.Spec, c, x, vec64(W.OutNorm), vec64(W.OutNormB))))
	if c.FinalSoftcap != 0 {
		for i := range out {
			out[i] = cap64(out[i], float64(c.FinalSoftcap))
		}
	}
	return out
}

package cpu

import (
	"math"

	"stepthrough/engine/model"
)

// RMSNorm writes x / sqrt(mean(x²) + eps) * w into out, accumulating in
// float64 as ggml does.
func RMSNorm(out, x, w []float32, eps float32) {
	sum := sumSquares(x)
	scale := float32(1 / math.Sqrt(float64(float32(sum/float64(len(x)))+eps)))
	w = w[:len(x)]
	out = out[:len(x)]
	for i, v := range x {
		out[i] = v * scale * w[i]
	}
}

// sumSquares is Σ x² in float64, over four running sums: one would wait
// on each addition's latency, and a batch's norms run on one thread.
func sumSquares(x []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		s0 += float64(v[0]) * float64(v[0])
		s1 += float64(v[1]) * float64(v[1])
		s2 += float64(v[2]) * float64(v[2])
		s3 += float64(v[3]) * float64(v[3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i]) * float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// LayerNorm writes (x - mean) / sqrt(var + eps) * w + b into out.
func LayerNorm(out, x, w, b []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := float32(sum / float64(len(x)))
	var sq float64
	for _, v := range x {
		d := float64(v - mean)
		sq += d * d
	}
	scale := float32(1 / math.Sqrt(float64(float32(sq/float64(len(x)))+eps)))
	w, b, out = w[:len(x)], b[:len(x)], out[:len(x)]
	for i, v := range x {
		out[i] = (v-mean)*scale*w[i] + b[i]
	}
}

// RopeNorm rotates adjacent pairs (x[i], x[i+1]) of each head's first dims
// values by pos·base^(-i/dims), as llama.cpp's NORM mode does for GGUF
// llama models. x holds heads×headDim values.
func RopeNorm(x []float32, heads, headDim, dims, pos int, base float32, cache []float32) {
	ropeTable(cache, dims, pos, &model.RopeParams{Base: base, FreqScale: 1, AttnFactor: 1}, nil)
	ropeNorm(x, heads, headDim, dims, cache)
}

// ropeNorm is RopeNorm with the position's table (ropeTable) made.
func ropeNorm(x []float32, heads, headDim, dims int, cache []float32) {
	for h := 0; h < heads; h++ {
		v := x[h*headDim : h*headDim+dims]
		for i := 0; i < dims; i += 2 {
			c, s := cache[i], cache[i+1]
			x0, x1 := v[i], v[i+1]
			v[i] = x0*c - x1*s
			v[i+1] = x0*s + x1*c
		}
	}
}

// RopeNeoX rotates (x[i], x[i+dims/2]) pairs (NEOX mode, e.g. qwen2).
func RopeNeoX(x []float32, heads, headDim, dims, pos int, base float32, cache []float32) {
	ropeTable(cache, dims, pos, &model.RopeParams{Base: base, FreqScale: 1, AttnFactor: 1}, nil)
	ropeNeoX(x, heads, headDim, dims, cache)
}

// ropeNeoX is RopeNeoX with the position's table made.
func ropeNeoX(x []float32, heads, headDim, dims int, cache []float32) {
	half := dims / 2
	for h := 0; h < heads; h++ {
		v := x[h*headDim : h*headDim+dims]
		for i := 0; i < half; i++ {
			c, s := cache[2*i], cache[2*i+1]
			x0, x1 := v[i], v[i+half]
			v[i] = x0*c - x1*s
			v[i+half] = x0*s + x1*c
		}
	}
}

// ropeTable fills cache with cos, sin of each pair's angle at pos, as
// ggml's rope cache does: θ_i = pos·base^(−2i/dims) computed
// incrementally in float32, divided by the pair's frequency factor (when
// the model has them), then scaled (ropeYarn).
func ropeTable(cache []float32, dims, pos int, p *model.RopeParams, factors []float32) {
	thetaScale := float32(math.Pow(float64(p.Base), -2.0/float64(dims)))
	theta := float32(pos)
	for i := 0; i < dims; i += 2 {
		t := theta
		if factors != nil {
			t /= factors[i/2]
		}
		cache[i], cache[i+1] = ropeYarn(t, p, i)
		theta *= thetaScale
	}
}

// ropeYarn is ggml's rope_yarn: the angle interpolated by FreqScale, mixed
// back toward the unscaled one by YaRN's ramp over the correction
// dimensions, and cos and sin scaled by the attention factor (and YaRN's
// magnitude term). Unscaled models take the first line only.
func ropeYarn(extrap float32, p *model.RopeParams, i0 int) (cos, sin float32) {
	theta, mscale := p.FreqScale*extrap, p.AttnFactor
	if p.ExtFactor != 0 {
		y := (float32(i0/2) - p.Corr[0]) / max(0.001, p.Corr[1]-p.Corr[0])
		ramp := (1 - min(1, max(0, y))) * p.ExtFactor
		theta = theta*(1-ramp) + extrap*ramp
		mscale *= 1 + 0.1*float32(math.Log(float64(1/p.FreqScale)))
	}
	s, c := math.Sincos(float64(theta))
	return float32(c) * mscale, float32(s) * mscale
}

// softcap sets x[i] = cap·tanh(x[i]/cap): scores and logits bounded to
// (−cap, cap), as gemma's soft caps.
func softcap(x []float32, cap float32) {
	for i, v := range x {
		x[i] = cap * float32(math.Tanh(float64(v/cap)))
	}
}

// actTask applies the MLP's nonlinearity to a on every worker: SiLU(a)·b
// when b is set (SwiGLU), else GELU(a), times b when set and geglu.
type actTask struct {
	a, b  []float32
	geglu bool
}

func (t *actTask) Run(_, lo, hi int) {
	switch {
	case t.geglu:
		gelu(t.a[lo:hi])
		mul(t.a[lo:hi], t.b[lo:hi])
	case t.b != nil:
		siluMul(t.a[lo:hi], t.b[lo:hi])
	default:
		gelu(t.a[lo:hi])
	}
}

func mul(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] *= src[i]
	}
}

// activate runs actTask over a (and b) split across the pool.
func (r *fwd) activate(a, b []float32) {
	r.act = actTask{a, b, r.m.Spec.FFN == model.GeGLU}
	r.pool.Run(len(a), 8192, &r.act)
	r.act = actTask{}
}

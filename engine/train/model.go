package train

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Config is the model shape.
type Config struct {
	Vocab, Ctx, Embd, Layers, Heads, FFN int
	// Arch is the family: GPT2 (also when empty) or Qwen3.
	Arch string
}

// The families the trainer makes.
const (
	GPT2  = "gpt2"
	Qwen3 = "qwen3"
)

// arch is c.Arch with the default filled in.
func (c Config) arch() string {
	if c.Arch == "" {
		return GPT2
	}
	return c.Arch
}

// Params returns the number of parameters.
func (c Config) Params() int { return newLayout(c).total }

// layerOff holds one layer's parameter offsets; a family's absent ones
// are -1.
type layerOff struct {
	ln1g, ln1b, wqkv, bqkv, wo, bo, ln2g, ln2b, wup, bup, wdown, bdown int
	qn, kn, wgate                                                      int // qwen3
}

type layout struct {
	c                 Config
	wte, wpe          int
	layers            []layerOff
	lnfg, lnfb, total int
}

func newLayout(c Config) layout {
	if c.arch() == Qwen3 {
		return newQwen3Layout(c)
	}
	l := layout{c: c}
	at := 0
	alloc := func(n int) int { o := at; at += n; return o }
	E, F := c.Embd, c.FFN
	l.wte, l.wpe = alloc(c.Vocab*E), alloc(c.Ctx*E)
	for i := 0; i < c.Layers; i++ {
		l.layers = append(l.layers, layerOff{
			ln1g: alloc(E), ln1b: alloc(E), wqkv: alloc(3 * E * E), bqkv: alloc(3 * E), wo: alloc(E * E), bo: alloc(E),
			ln2g: alloc(E), ln2b: alloc(E), wup: alloc(F * E), bup: alloc(F), wdown: alloc(E * F), bdown: alloc(E),
			qn: -1, kn: -1, wgate: -1,
		})
	}
	l.lnfg, l.lnfb = alloc(E), alloc(E)
	l.total = at
	return l
}

// Model holds parameters, gradients and activations for batches of B×T.
type Model struct {
	C    Config
	L    layout
	W, G []float32 // parameters and their gradients
	mm   *mm
	B, T int
	acts *acts
	// shapes keeps the activations of other batch shapes, so that passes
	// of two shapes can alternate without reallocating.
	shapes map[[2]int]*acts
}

// HeadMask scales the heads of one layer's attention before its output
// projection, as an ablation does: head h of sequence b by
// Scale[b·Heads+h] (0 switches it off).
type HeadMask struct {
	Layer int
	Scale []float32
}

type acts struct {
	tok, tgt                []int32
	x                       [][]float32 // residual stream: input of each layer and the final one
	ln1, ln1m, ln1r         [][]float32
	qkv, probs, att, x1     [][]float32
	ln2, ln2m, ln2r, up, g  [][]float32
	lnf, lnfm, lnfr, logits []float32
	dlogits, dx, dtmp, dqkv []float32
	dup, datt, dln          []float32
	xT, dyT                 []float32
	// qwen3: Q/K/V before the Q/K norms and RoPE, each head's 1/rms
	// (queries then keys), the gate, its gradient, and cos|sin by position
	qkvRaw, qkr, gate  [][]float32
	dgate, rope, dhead []float32 // dhead: one head's gradient, rotated back
	ropeT              int
}

// NewModel initialises a model with GPT-2's scheme (normal std 0.02;
// residual projections scaled by 1/sqrt(2·layers); norms 1, biases 0).
func NewModel(c Config, seed uint64, threads int) *Model {
	l := newLayout(c)
	m := &Model{C: c, L: l, W: make([]float32, l.total), G: make([]float32, l.total), mm: newMM(threads, max(c.Embd, c.FFN))}
	r := rand.New(rand.NewPCG(seed, 77))
	normal := func(off, n int, std float64) {
		for i := 0; i < n; i++ {
			m.W[off+i] = float32(r.NormFloat64() * std)
		}
	}
	ones := func(off, n int) {
		for i := 0; i < n; i++ {
			m.W[off+i] = 1
		}
	}
	E, F := c.Embd, c.FFN
	normal(l.wte, c.Vocab*E, 0.02)
	if l.wpe >= 0 {
		normal(l.wpe, c.Ctx*E, 0.01)
	}
	proj := 0.02 / math.Sqrt(2*float64(c.Layers))
	for _, o := range l.layers {
		ones(o.ln1g, E)
		ones(o.ln2g, E)
		normal(o.wqkv, 3*E*E, 0.02)
		normal(o.wo, E*E, proj)
		normal(o.wup, F*E, 0.02)
		normal(o.wdown, E*F, proj)
		if o.wgate >= 0 {
			normal(o.wgate, F*E, 0.02)
			ones(o.qn, E/c.Heads)
			ones(o.kn, E/c.Heads)
		}
	}
	ones(l.lnfg, E)
	return m
}

func (m *Model) w(off, n int) []float32 { return m.W[off : off+n] }
func (m *Model) g(off, n int) []float32 { return m.G[off : off+n] }

func (m *Model) ensure(B, T int) {
	if m.acts != nil && m.B == B && m.T == T {
		return
	}
	if m.acts != nil {
		if m.shapes == nil {
			m.shapes = map[[2]int]*acts{}
		}
		m.shapes[[2]int{m.B, m.T}] = m.acts
		if a, ok := m.shapes[[2]int{B, T}]; ok {
			m.acts, m.B, m.T = a, B, T
			return
		}
	}
	c, N := m.C, B*T
	E, F, V, H := c.Embd, c.FFN, c.Vocab, c.Heads
	f := func(n int) []float32 { return make([]float32, n) }
	a := &acts{tok: make([]int32, N), tgt: make([]int32, N)}
	for i := 0; i <= c.Layers; i++ {
		a.x = append(a.x, f(N*E))
	}
	for i := 0; i < c.Layers; i++ {
		a.ln1, a.ln1m, a.ln1r = append(a.ln1, f(N*E)), append(a.ln1m, f(N)), append(a.ln1r, f(N))
		a.qkv, a.probs, a.att, a.x1 = append(a.qkv, f(N*3*E)), append(a.probs, f(B*H*T*T)), append(a.att, f(N*E)), append(a.x1, f(N*E))
		a.ln2, a.ln2m, a.ln2r = append(a.ln2, f(N*E)), append(a.ln2m, f(N)), append(a.ln2r, f(N))
		a.up, a.g = append(a.up, f(N*F)), append(a.g, f(N*F))
	}
	if c.arch() == Qwen3 {
		for i := 0; i < c.Layers; i++ {
			a.qkvRaw, a.qkr, a.gate = append(a.qkvRaw, f(N*3*E)), append(a.qkr, f(N*2*H)), append(a.gate, f(N*F))
		}
		a.dgate, a.dhead = f(N*F), f(E/H)
	}
	a.lnf, a.lnfm, a.lnfr, a.logits, a.dlogits = f(N*E), f(N), f(N), f(N*V), f(N*V)
	a.dx, a.dtmp, a.dqkv, a.dup, a.datt, a.dln = f(N*E), f(N*E), f(N*3*E), f(N*F), f(N*E), f(N*E)
	big := max(E, F, V, 3*E)
	a.xT, a.dyT = f(N*big), f(N*big)
	m.acts, m.B, m.T = a, B, T
}

const lnEps = 1e-5

// Forward runs B sequences of T tokens (tok, row-major) and returns the
// mean cross-entropy against tgt over the targets that are not negative
// (a negative target is not counted); with grad it also fills m.G (zeroed
// first).
func (m *Model) Forward(tok, tgt []int32, B, T int, grad bool) float64 {
	m.ensure(B, T)
	if m.C.arch() == Qwen3 {
		return m.forwardQwen3(tok, tgt, B, T, grad)
	}
	return m.forwardGPT2(tok, tgt, B, T, grad, nil)
}

// ForwardMasked is Forward with one layer's heads scaled by mask, in the
// forward pass and its gradient: training under an ablation. Only the GPT-2
// family takes a mask.
func (m *Model) ForwardMasked(tok, tgt []int32, B, T int, grad bool, mask HeadMask) (float64, error) {
	if m.C.arch() != GPT2 {
		return 0, fmt.Errorf("head mask: the %s trainer does not mask heads", m.C.arch())
	}
	if mask.Layer < 0 || mask.Layer >= m.C.Layers || len(mask.Scale) != B*m.C.Heads {
		return 0, fmt.Errorf("head mask: layer %d of %d, %d scales for %d sequences of %d heads", mask.Layer, m.C.Layers, len(mask.Scale), B, m.C.Heads)
	}
	m.ensure(B, T)
	return m.forwardGPT2(tok, tgt, B, T, grad, &mask), nil
}

// forwardGPT2 is the GPT-2 family's pass, with mask (may be nil) applied.
func (m *Model) forwardGPT2(tok, tgt []int32, B, T int, grad bool, mask *HeadMask) float64 {
	c, l, a := m.C, m.L, m.acts
	N, E, F, H := B*T, c.Embd, c.FFN, c.Heads
	D := E / H
	copy(a.tok, tok)
	copy(a.tgt, tgt)
	x := a.x[0]
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			row := x[(b*T+t)*E : (b*T+t+1)*E]
			te, pe := m.w(l.wte+int(tok[b*T+t])*E, E), m.w(l.wpe+t*E, E)
			for i := range row {
				row[i] = te[i] + pe[i]
			}
		}
	}
	for i, o := range l.layers {
		x, next := a.x[i], a.x[i+1]
		layerNorm(a.ln1[i], a.ln1m[i], a.ln1r[i], x, m.w(o.ln1g, E), m.w(o.ln1b, E), N, E, lnEps)
		m.mm.linear(a.qkv[i], a.ln1[i], m.w(o.wqkv, 3*E*E), m.w(o.bqkv, 3*E), N, E, 3*E)
		m.mm.attention(a.att[i], a.probs[i], a.qkv[i], B, T, H, D)
		if mask != nil && mask.Layer == i {
			scaleHeads(a.att[i], mask.Scale, B, T, H, D)
		}
		m.mm.linear(a.dtmp, a.att[i], m.w(o.wo, E*E), m.w(o.bo, E), N, E, E)
		for j := range x {
			a.x1[i][j] = x[j] + a.dtmp[j]
		}
		layerNorm(a.ln2[i], a.ln2m[i], a.ln2r[i], a.x1[i], m.w(o.ln2g, E), m.w(o.ln2b, E), N, E, lnEps)
		m.mm.linear(a.up[i], a.ln2[i], m.w(o.wup, F*E), m.w(o.bup, F), N, E, F)
		up, g := a.up[i], a.g[i]
		m.mm.each(len(up), func(j int) { g[j] = gelu(up[j]) })
		m.mm.linear(a.dtmp, a.g[i], m.w(o.wdown, E*F), m.w(o.bdown, E), N, F, E)
		for j := range next {
			next[j] = a.x1[i][j] + a.dtmp[j]
		}
	}
	layerNorm(a.lnf, a.lnfm, a.lnfr, a.x[c.Layers], m.w(l.lnfg, E), m.w(l.lnfb, E), N, E, lnEps)
	loss := m.logitsLoss(tgt, N, grad)
	if !grad {
		return loss
	}
	dx := a.dx
	layerNormBack(dx, m.g(l.lnfg, E), m.g(l.lnfb, E), a.dln, a.x[c.Layers], a.lnfm, a.lnfr, m.w(l.lnfg, E), N, E)
	for i := c.Layers - 1; i >= 0; i-- {
		o := l.layers[i]
		// x2 = x1 + down(gelu(up(ln2(x1))))
		// dg = dx · Wdown into dup, then through gelu
		m.mm.linearBack(a.dup, m.g(o.wdown, E*F), m.g(o.bdown, E), dx, a.g[i], m.w(o.wdown, E*F), N, F, E, a.xT, a.dyT)
		up, dup := a.up[i], a.dup
		m.mm.each(len(up), func(j int) { dup[j] *= geluGrad(up[j]) })
		clear(a.dln)
		m.mm.linearBack(a.dln, m.g(o.wup, F*E), m.g(o.bup, F), a.dup, a.ln2[i], m.w(o.wup, F*E), N, E, F, a.xT, a.dyT)
		// dx1 = dx (residual) + LN2 backward
		layerNormBack(dx, m.g(o.ln2g, E), m.g(o.ln2b, E), a.dln, a.x1[i], a.ln2m[i], a.ln2r[i], m.w(o.ln2g, E), N, E)
		// x1 = x + Wo·att
		clear(a.datt)
		m.mm.linearBack(a.datt, m.g(o.wo, E*E), m.g(o.bo, E), dx, a.att[i], m.w(o.wo, E*E), N, E, E, a.xT, a.dyT)
		if mask != nil && mask.Layer == i {
			scaleHeads(a.datt, mask.Scale, B, T, H, D)
		}
		clear(a.dqkv)
		m.mm.attentionBack(a.dqkv, a.datt, a.probs[i], a.qkv[i], B, T, H, D)
		clear(a.dln)
		m.mm.linearBack(a.dln, m.g(o.wqkv, 3*E*E), m.g(o.bqkv, 3*E), a.dqkv, a.ln1[i], m.w(o.wqkv, 3*E*E), N, E, 3*E, a.xT, a.dyT)
		layerNormBack(dx, m.g(o.ln1g, E), m.g(o.ln1b, E), a.dln, a.x[i], a.ln1m[i], a.ln1r[i], m.w(o.ln1g, E), N, E)
	}
	// embeddings
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			row := dx[(b*T+t)*E : (b*T+t+1)*E]
			te, pe := m.g(l.wte+int(tok[b*T+t])*E, E), m.g(l.wpe+t*E, E)
			for i, v := range row {
				te[i] += v
				pe[i] += v
			}
		}
	}
	return loss
}

// scaleHeads multiplies head h of sequence b in x (B×T rows of H heads of
// D) by scale[b·H+h].
func scaleHeads(x, scale []float32, B, T, H, D int) {
	for b := 0; b < B; b++ {
		for t := 0; t < T; t++ {
			row := x[(b*T+t)*H*D : (b*T+t+1)*H*D]
			for h := 0; h < H; h++ {
				k := scale[b*H+h]
				for d := h * D; d < (h+1)*D; d++ {
					row[d] *= k
				}
			}
		}
	}
}

// logitsLoss applies the output matrix (tied to the embeddings) to the
// final norm's output a.lnf and returns the mean loss; with grad it zeroes
// m.G and a.dx and leaves the gradient at a.lnf in a.dln.
func (m *Model) logitsLoss(tgt []int32, N int, grad bool) float64 {
	l, a, E, V := m.L, m.acts, m.C.Embd, m.C.Vocab
	m.mm.linear(a.logits, a.lnf, m.w(l.wte, V*E), nil, N, E, V)
	if !grad {
		return m.mm.crossEntropy(nil, a.logits, tgt, N, V)
	}
	loss := m.mm.crossEntropy(a.dlogits, a.logits, tgt, N, V)
	clear(m.G)
	clear(a.dln)
	m.mm.linearBack(a.dln, m.g(l.wte, V*E), nil, a.dlogits, a.lnf, m.w(l.wte, V*E), N, E, V, a.xT, a.dyT)
	clear(a.dx)
	return loss
}

// Logits of the last Forward, [B·T×V].
func (m *Model) Logits() []float32 { return m.acts.logits }

// Attention is the attention weights of layer in the last Forward,
// [B×Heads×T×T]: row i of a head holds query i's weights on keys 0..i.
func (m *Model) Attention(layer int) []float32 { return m.acts.probs[layer] }

// AdamW holds optimizer state.
type AdamW struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	M, V                               []float32
	Step                               int
	decay                              []bool // which parameters decay (made once)
}

// NewAdamW returns an optimizer for n parameters.
func NewAdamW(n int, lr, wd float64) *AdamW {
	return &AdamW{LR: lr, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: wd, M: make([]float32, n), V: make([]float32, n)}
}

// Update applies one step at learning rate lr to w with gradients g, after
// scaling g so its global norm is at most clip (when clip > 0). Weight
// decay skips the vectors (norms, biases). It returns the gradient norm.
func (o *AdamW) Update(m *Model, lr, clip float64) float64 {
	var ss float64
	for _, v := range m.G {
		ss += float64(v) * float64(v)
	}
	norm := math.Sqrt(ss)
	scale := float32(1)
	if clip > 0 && norm > clip {
		scale = float32(clip / norm)
	}
	o.Step++
	b1c := 1 - math.Pow(o.Beta1, float64(o.Step))
	b2c := 1 - math.Pow(o.Beta2, float64(o.Step))
	if len(o.decay) != len(m.W) {
		o.decay = m.decayMask()
	}
	decay := o.decay
	b1, b2 := float32(o.Beta1), float32(o.Beta2)
	for i := range m.W {
		g := m.G[i] * scale
		o.M[i] = b1*o.M[i] + (1-b1)*g
		o.V[i] = b2*o.V[i] + (1-b2)*g*g
		mh := float64(o.M[i]) / b1c
		vh := float64(o.V[i]) / b2c
		upd := mh / (math.Sqrt(vh) + o.Eps)
		if decay[i] {
			upd += o.WeightDecay * float64(m.W[i])
		}
		m.W[i] -= float32(lr * upd)
	}
	return norm
}

// decayMask marks the matrices (embeddings and weights), not norms/biases.
func (m *Model) decayMask() []bool {
	mask := make([]bool, len(m.W))
	set := func(off, n int) {
		for i := off; i < off+n; i++ {
			mask[i] = true
		}
	}
	c, l := m.C, m.L
	E, F := c.Embd, c.FFN
	set(l.wte, c.Vocab*E)
	if l.wpe >= 0 {
		set(l.wpe, c.Ctx*E)
	}
	for _, o := range l.layers {
		set(o.wqkv, 3*E*E)
		set(o.wo, E*E)
		set(o.wup, F*E)
		set(o.wdown, E*F)
		if o.wgate >= 0 {
			set(o.wgate, F*E)
		}
	}
	return mask
}

// Schedule is linear warm-up then cosine decay to min.
func Schedule(step, warmup, total int, peak, minLR float64) float64 {
	if step < warmup {
		return peak * float64(step+1) / float64(warmup)
	}
	p := float64(step-warmup) / float64(max(1, total-warmup))
	return minLR + 0.5*(peak-minLR)*(1+math.Cos(math.Pi*min(p, 1)))
}

func (c Config) String() string {
	return fmt.Sprintf("vocab %d, context %d, embedding %d, %d layers, %d heads, FFN %d (%d parameters)", c.Vocab, c.Ctx, c.Embd, c.Layers, c.Heads, c.FFN, c.Params())
}

// TrainFLOPsPerToken counts the floating-point operations of one training
// step per token with windows of T tokens: the forward pass's matrix
// products (2 per multiply-add: QKV, output, MLP, the tied logits) and
// causal attention (scores and weighted values over (T+1)/2 keys on
// average), tripled for the backward pass.
func (c Config) TrainFLOPsPerToken(T int) float64 {
	E, F, L := float64(c.Embd), float64(c.FFN), float64(c.Layers)
	mlp := 2 * E * F
	if c.arch() == Qwen3 {
		mlp = 3 * E * F // gate, up and down
	}
	mat := L*(3*E*E+E*E+mlp) + float64(c.Vocab)*E
	attn := L * 2 * E * float64(T+1) / 2
	return 3 * 2 * (mat + attn)
}

package train

import "math"

// The qwen3 family as the trainer makes it: token embeddings only (no
// position table; positions enter through RoPE), RMSNorm without biases,
// each head's query and key RMS-normed with their own gains and then
// rotated by NEOX RoPE (pair i with i+D/2), a SwiGLU MLP (down(silu(gate)
// ⊙ up)), no biases anywhere, and the output tied to the embeddings, as
// Qwen3-0.6B's is.
const (
	qwenRopeBase = 10000
	qwenRMSEps   = 1e-6
)

func newQwen3Layout(c Config) layout {
	l := layout{c: c, wpe: -1, lnfb: -1}
	at := 0
	alloc := func(n int) int { o := at; at += n; return o }
	E, F, D := c.Embd, c.FFN, c.Embd/c.Heads
	l.wte = alloc(c.Vocab * E)
	for i := 0; i < c.Layers; i++ {
		l.layers = append(l.layers, layerOff{
			ln1g: alloc(E), wqkv: alloc(3 * E * E), qn: alloc(D), kn: alloc(D), wo: alloc(E * E),
			ln2g: alloc(E), wgate: alloc(F * E), wup: alloc(F * E), wdown: alloc(E * F),
			ln1b: -1, bqkv: -1, bo: -1, ln2b: -1, bup: -1, bdown: -1,
		})
	}
	l.lnfg = alloc(E)
	l.total = at
	return l
}

func (m *Model) forwardQwen3(tok, tgt []int32, B, T int, grad bool) float64 {
	c, l, a := m.C, m.L, m.acts
	N, E, F, H := B*T, c.Embd, c.FFN, c.Heads
	D := E / H
	a.ropeTable(T, D)
	copy(a.tok, tok)
	copy(a.tgt, tgt)
	for i, t := range tok[:N] {
		copy(a.x[0][i*E:(i+1)*E], m.w(l.wte+int(t)*E, E))
	}
	for i, o := range l.layers {
		x, next := a.x[i], a.x[i+1]
		rmsNorm(a.ln1[i], a.ln1r[i], x, m.w(o.ln1g, E), N, E)
		m.mm.linear(a.qkvRaw[i], a.ln1[i], m.w(o.wqkv, 3*E*E), nil, N, E, 3*E)
		qkNormRope(a.qkv[i], a.qkr[i], a.qkvRaw[i], m.w(o.qn, D), m.w(o.kn, D), a.rope, N, T, H, D)
		m.mm.attention(a.att[i], a.probs[i], a.qkv[i], B, T, H, D)
		m.mm.linear(a.dtmp, a.att[i], m.w(o.wo, E*E), nil, N, E, E)
		for j := range x {
			a.x1[i][j] = x[j] + a.dtmp[j]
		}
		rmsNorm(a.ln2[i], a.ln2r[i], a.x1[i], m.w(o.ln2g, E), N, E)
		m.mm.linear(a.gate[i], a.ln2[i], m.w(o.wgate, F*E), nil, N, E, F)
		m.mm.linear(a.up[i], a.ln2[i], m.w(o.wup, F*E), nil, N, E, F)
		gate, up, act := a.gate[i], a.up[i], a.g[i]
		m.mm.each(len(up), func(j int) { act[j] = gate[j] * sigmoid(gate[j]) * up[j] })
		m.mm.linear(a.dtmp, act, m.w(o.wdown, E*F), nil, N, F, E)
		for j := range next {
			next[j] = a.x1[i][j] + a.dtmp[j]
		}
	}
	rmsNorm(a.lnf, a.lnfr, a.x[c.Layers], m.w(l.lnfg, E), N, E)
	loss := m.logitsLoss(tgt, N, grad)
	if !grad {
		return loss
	}
	dx := a.dx
	rmsNormBack(dx, m.g(l.lnfg, E), a.dln, a.x[c.Layers], a.lnfr, m.w(l.lnfg, E), N, E)
	for i := c.Layers - 1; i >= 0; i-- {
		m.backQwen3Layer(i, dx, B, T)
	}
	for i, t := range tok[:N] {
		te := m.g(l.wte+int(t)*E, E)
		for j, v := range dx[i*E : (i+1)*E] {
			te[j] += v
		}
	}
	return loss
}

// backQwen3Layer takes dx, the gradient at layer i's output, to its input,
// accumulating the layer's parameter gradients.
func (m *Model) backQwen3Layer(i int, dx []float32, B, T int) {
	c, a, o := m.C, m.acts, m.L.layers[i]
	N, E, F, H := B*T, c.Embd, c.FFN, c.Heads
	D := E / H
	// x2 = x1 + down(silu(gate(ln2)) ⊙ up(ln2))
	m.mm.linearBack(a.dup, m.g(o.wdown, E*F), nil, dx, a.g[i], m.w(o.wdown, E*F), N, F, E, a.xT, a.dyT) // dup: the gradient at silu(gate) ⊙ up
	gate, up, dup, dgate := a.gate[i], a.up[i], a.dup, a.dgate
	m.mm.each(len(up), func(j int) {
		g := gate[j]
		s := sigmoid(g)
		dgate[j] = dup[j] * up[j] * s * (1 + g*(1-s))
		dup[j] *= g * s
	})
	m.mm.linearBack(a.dln, m.g(o.wgate, F*E), nil, dgate, a.ln2[i], m.w(o.wgate, F*E), N, E, F, a.xT, a.dyT)
	m.mm.linearBack(a.datt, m.g(o.wup, F*E), nil, dup, a.ln2[i], m.w(o.wup, F*E), N, E, F, a.xT, a.dyT)
	for j, v := range a.datt {
		a.dln[j] += v
	}
	rmsNormBack(dx, m.g(o.ln2g, E), a.dln, a.x1[i], a.ln2r[i], m.w(o.ln2g, E), N, E)
	// x1 = x + Wo·attention(rope(qknorm(Wqkv·ln1(x))))
	m.mm.linearBack(a.datt, m.g(o.wo, E*E), nil, dx, a.att[i], m.w(o.wo, E*E), N, E, E, a.xT, a.dyT)
	clear(a.dqkv)
	m.mm.attentionBack(a.dqkv, a.datt, a.probs[i], a.qkv[i], B, T, H, D)
	qkNormRopeBack(a.dqkv, m.g(o.qn, D), m.g(o.kn, D), a.qkvRaw[i], a.qkr[i], m.w(o.qn, D), m.w(o.kn, D), a.rope, a.dhead, N, T, H, D)
	m.mm.linearBack(a.dln, m.g(o.wqkv, 3*E*E), nil, a.dqkv, a.ln1[i], m.w(o.wqkv, 3*E*E), N, E, 3*E, a.xT, a.dyT)
	rmsNormBack(dx, m.g(o.ln1g, E), a.dln, a.x[i], a.ln1r[i], m.w(o.ln1g, E), N, E)
}

// ropeTable fills a.rope with cos then sin of each pair's angle,
// p·base^(−2i/D), for positions 0..T-1.
func (a *acts) ropeTable(T, D int) {
	if a.ropeT == T && len(a.rope) == T*D {
		return
	}
	half := D / 2
	a.rope, a.ropeT = make([]float32, T*D), T
	for p := 0; p < T; p++ {
		for i := 0; i < half; i++ {
			th := float64(p) * math.Pow(qwenRopeBase, -2*float64(i)/float64(D))
			a.rope[p*D+i], a.rope[p*D+half+i] = float32(math.Cos(th)), float32(math.Sin(th))
		}
	}
}

// rmsNorm: y = x/√(mean(x²)+ε)·g per row of d; keeps 1/rms.
func rmsNorm(y, rstd, x, g []float32, n, d int) {
	for t := 0; t < n; t++ {
		rstd[t] = rmsRow(y[t*d:(t+1)*d], x[t*d:(t+1)*d], g)
	}
}

// rmsRow normalises one row into y and returns its 1/rms.
func rmsRow(y, x, g []float32) float32 {
	var sq float64
	for _, v := range x {
		sq += float64(v) * float64(v)
	}
	rs := float32(1 / math.Sqrt(sq/float64(len(x))+qwenRMSEps))
	for i, v := range x {
		y[i] = v * rs * g[i]
	}
	return rs
}

// rmsNormBack accumulates dg and adds the input gradient into dx.
func rmsNormBack(dx, dg, dy, x, rstd, g []float32, n, d int) {
	for t := 0; t < n; t++ {
		rmsRowBack(dx[t*d:(t+1)*d], dg, dy[t*d:(t+1)*d], x[t*d:(t+1)*d], rstd[t], g)
	}
}

// rmsRowBack is one row of rmsNormBack: with x̂ = x/rms and n = dy⊙g,
// dx += (n − x̂·mean(n⊙x̂))/rms.
func rmsRowBack(dx, dg, dy, x []float32, rs float32, g []float32) {
	var s float64
	for i, v := range x {
		xh := v * rs
		s += float64(dy[i] * g[i] * xh)
		dg[i] += dy[i] * xh
	}
	mean := float32(s / float64(len(x)))
	for i, v := range x {
		dx[i] += rs * (dy[i]*g[i] - v*rs*mean)
	}
}

// qkNormRope writes out = raw with each query and key head RMS-normed
// (gains qn, kn) and turned by RoPE at its position (row r is position
// r mod T); values are copied. rstd keeps each head's 1/rms.
func qkNormRope(out, rstd, raw, qn, kn, rope []float32, N, T, H, D int) {
	E, half := H*D, D/2
	for r := 0; r < N; r++ {
		cs := rope[(r%T)*D : (r%T+1)*D]
		src, dst := raw[r*3*E:(r+1)*3*E], out[r*3*E:(r+1)*3*E]
		for j := 0; j < 2*H; j++ { // queries, then keys (E = H·D on)
			g := qn
			if j >= H {
				g = kn
			}
			y := dst[j*D : (j+1)*D]
			rstd[r*2*H+j] = rmsRow(y, src[j*D:(j+1)*D], g)
			for i := 0; i < half; i++ {
				a, b, co, si := y[i], y[i+half], cs[i], cs[half+i]
				y[i], y[i+half] = a*co-b*si, a*si+b*co
			}
		}
		copy(dst[2*E:], src[2*E:])
	}
}

// qkNormRopeBack turns d, the gradient at qkNormRope's output, into the
// gradient at its input (in place) and accumulates the gains' gradients;
// dn is scratch for one head.
func qkNormRopeBack(d, dqn, dkn, raw, rstd, qn, kn, rope, dn []float32, N, T, H, D int) {
	E, half := H*D, D/2
	for r := 0; r < N; r++ {
		cs := rope[(r%T)*D : (r%T+1)*D]
		src, dr := raw[r*3*E:(r+1)*3*E], d[r*3*E:(r+1)*3*E]
		for j := 0; j < 2*H; j++ {
			g, dg := qn, dqn
			if j >= H {
				g, dg = kn, dkn
			}
			y := dr[j*D : (j+1)*D]
			for i := 0; i < half; i++ { // the inverse rotation
				a, b, co, si := y[i], y[i+half], cs[i], cs[half+i]
				dn[i], dn[i+half] = a*co+b*si, -a*si+b*co
			}
			clear(y)
			rmsRowBack(y, dg, dn, src[j*D:(j+1)*D], rstd[r*2*H+j], g)
		}
	}
}

// sigmoid is 1/(1+e^−x), through expNeg on either side of 0.
func sigmoid(x float32) float32 {
	if x >= 0 {
		return 1 / (1 + expNeg(-x))
	}
	e := expNeg(x)
	return e / (1 + e)
}

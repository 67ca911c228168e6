package train

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Every parameter group's analytic gradient matches central finite
// differences of the loss, for each family: this checks the backward pass
// of every op (embeddings, LayerNorm and RMSNorm, linear layers, Q/K norms,
// RoPE, attention, GELU and SwiGLU, residuals, tied output,
// cross-entropy) through the whole model.
func TestGradientsMatchFiniteDifferences(t *testing.T) {
	for _, arch := range []string{GPT2, Qwen3} {
		t.Run(arch, func(t *testing.T) {
			c := Config{Vocab: 23, Ctx: 8, Embd: 8, Layers: 2, Heads: 2, FFN: 16, Arch: arch}
			m := NewModel(c, 1, 2)
			r := rand.New(rand.NewPCG(2, 3))
			for i := range m.W { // larger weights than the init, so gradients are not tiny
				m.W[i] += float32(r.NormFloat64() * 0.3)
			}
			B, T := 2, 6
			tok, tgt := make([]int32, B*T), make([]int32, B*T)
			for i := range tok {
				tok[i], tgt[i] = int32(r.IntN(c.Vocab)), int32(r.IntN(c.Vocab))
			}
			loss := m.Forward(tok, tgt, B, T, true)
			if l2 := m.Forward(tok, tgt, B, T, false); math.Abs(l2-loss) > 1e-6 {
				t.Fatalf("loss with and without gradients: %g vs %g", loss, l2)
			}
			m.Forward(tok, tgt, B, T, true)
			grad := append([]float32(nil), m.G...)
			// a small step: at 1e-2 the loss's curvature moves some
			// embedding entries' differences by 1e-2
			const eps = 1e-3
			groups := paramGroups(m)
			for _, name := range slices.Sorted(maps.Keys(groups)) { // sorted: the same entries every run
				g := groups[name]
				worst := 0.0
				for k := 0; k < 12; k++ {
					i := g[0] + r.IntN(g[1])
					orig := m.W[i]
					m.W[i] = orig + eps
					lp := m.Forward(tok, tgt, B, T, false)
					m.W[i] = orig - eps
					lm := m.Forward(tok, tgt, B, T, false)
					m.W[i] = orig
					num := (lp - lm) / (2 * eps)
					err := math.Abs(float64(grad[i]) - num)
					if err > 2e-3+0.03*math.Abs(num) {
						t.Errorf("%s[%d]: analytic %g, finite difference %g", name, i-g[0], grad[i], num)
					}
					worst = max(worst, err)
				}
				t.Logf("%s: worst |analytic - numeric| = %.2g", name, worst)
			}
		})
	}
}

// paramGroups names each parameter group's offset and size (a weight and
// the bias after it count as one group).
func paramGroups(m *Model) map[string][2]int {
	c, l := m.C, m.L
	E, F, D := c.Embd, c.FFN, c.Embd/c.Heads
	if c.arch() == Qwen3 {
		groups := map[string][2]int{"wte": {l.wte, c.Vocab * E}, "lnf": {l.lnfg, E}}
		for i, o := range l.layers {
			groups[fmtName("ln1", i)] = [2]int{o.ln1g, E}
			groups[fmtName("qkv", i)] = [2]int{o.wqkv, 3 * E * E}
			groups[fmtName("qnorm", i)] = [2]int{o.qn, D}
			groups[fmtName("knorm", i)] = [2]int{o.kn, D}
			groups[fmtName("wo", i)] = [2]int{o.wo, E * E}
			groups[fmtName("ln2", i)] = [2]int{o.ln2g, E}
			groups[fmtName("gate", i)] = [2]int{o.wgate, F * E}
			groups[fmtName("up", i)] = [2]int{o.wup, F * E}
			groups[fmtName("down", i)] = [2]int{o.wdown, E * F}
		}
		return groups
	}
	groups := map[string][2]int{"wte": {l.wte, c.Vocab * E}, "wpe": {l.wpe, c.Ctx * E}, "lnf": {l.lnfg, 2 * E}}
	for i, o := range l.layers {
		groups[fmtName("ln1", i)] = [2]int{o.ln1g, 2 * E}
		groups[fmtName("qkv", i)] = [2]int{o.wqkv, 3*E*E + 3*E}
		groups[fmtName("wo", i)] = [2]int{o.wo, E*E + E}
		groups[fmtName("ln2", i)] = [2]int{o.ln2g, 2 * E}
		groups[fmtName("up", i)] = [2]int{o.wup, F*E + F}
		groups[fmtName("down", i)] = [2]int{o.wdown, E*F + E}
	}
	return groups
}

func fmtName(s string, i int) string { return s + string(rune('0'+i)) }

func TestAdamWAndSchedule(t *testing.T) {
	if Schedule(0, 10, 100, 1e-3, 1e-4) != 1e-4 || math.Abs(Schedule(9, 10, 100, 1e-3, 1e-4)-1e-3) > 1e-12 || math.Abs(Schedule(100, 10, 100, 1e-3, 1e-4)-1e-4) > 1e-12 {
		t.Error("schedule: warm-up to the peak, cosine down to the minimum")
	}
	// a few steps on one batch drive its loss down
	c := Config{Vocab: 30, Ctx: 8, Embd: 16, Layers: 1, Heads: 2, FFN: 32}
	m := NewModel(c, 3, 2)
	opt := NewAdamW(len(m.W), 1e-2, 0.01)
	tok := []int32{1, 2, 3, 4, 5, 6, 7, 8}
	tgt := []int32{2, 3, 4, 5, 6, 7, 8, 9}
	first := m.Forward(tok, tgt, 1, 8, true)
	var last float64
	for s := 0; s < 60; s++ {
		last = m.Forward(tok, tgt, 1, 8, true)
		opt.Update(m, 1e-2, 1)
	}
	if !(last < first/4) {
		t.Errorf("loss %g -> %g: the optimizer does not learn", first, last)
	}
}

func TestTranspose(t *testing.T) {
	for _, s := range [][2]int{{1, 1}, {8, 8}, {9, 17}, {16, 3}, {33, 40}} {
		rows, cols := s[0], s[1]
		x, dst := make([]float32, rows*cols), make([]float32, rows*cols)
		for i := range x {
			x[i] = float32(i)
		}
		transpose(dst, x, rows, cols)
		for r := 0; r < rows; r++ {
			for c := 0; c < cols; c++ {
				if dst[c*rows+r] != x[r*cols+c] {
					t.Fatalf("%dx%d: [%d,%d] wrong", rows, cols, r, c)
				}
			}
		}
	}
}

func TestExpNeg(t *testing.T) {
	worst := 0.0
	for x := float32(-87); x <= 0; x += 0.0137 {
		want := math.Exp(float64(x))
		got := float64(expNeg(x))
		if rel := math.Abs(got-want) / want; rel > worst {
			worst = rel
		}
	}
	if worst > 3e-7 {
		t.Errorf("worst relative error %.2g", worst)
	}
	if expNeg(-100) != 0 || expNeg(0) != 1 {
		t.Errorf("expNeg(-100) = %g, expNeg(0) = %g", expNeg(-100), expNeg(0))
	}
}

// Training under a head mask with some targets not counted: the analytic
// gradient is that of the loss of the masked model over the counted
// targets, a head zeroed in every sequence gets no gradient into its
// queries, keys and values, an all-ones mask is the unmasked pass, and a
// batch with no counted target has loss 0.
func TestMaskedGradients(t *testing.T) {
	c := Config{Vocab: 23, Ctx: 8, Embd: 8, Layers: 2, Heads: 2, FFN: 16}
	m := NewModel(c, 1, 2)
	r := rand.New(rand.NewPCG(4, 5))
	for i := range m.W {
		m.W[i] += float32(r.NormFloat64() * 0.3)
	}
	B, T := 3, 6
	tok, tgt := make([]int32, B*T), make([]int32, B*T)
	for i := range tok {
		tok[i], tgt[i] = int32(r.IntN(c.Vocab)), int32(r.IntN(c.Vocab))
		if i%3 != 0 {
			tgt[i] = -1
		}
	}
	ones := HeadMask{Layer: 1, Scale: []float32{1, 1, 1, 1, 1, 1}}
	if got, err := m.ForwardMasked(tok, tgt, B, T, false, ones); err != nil || got != m.Forward(tok, tgt, B, T, false) {
		t.Fatalf("all-ones mask: loss %g (%v), unmasked %g", got, err, m.Forward(tok, tgt, B, T, false))
	}
	mask := HeadMask{Layer: 1, Scale: []float32{0, 1, 0, 0.5, 0, 1}} // head 0 off everywhere
	loss := func() float64 {
		l, err := m.ForwardMasked(tok, tgt, B, T, true, mask)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	masked := loss()
	grad := append([]float32(nil), m.G...)
	if masked == m.Forward(tok, tgt, B, T, false) {
		t.Fatalf("the mask changed nothing: loss %g", masked)
	}
	const eps = 1e-3
	for _, name := range slices.Sorted(maps.Keys(paramGroups(m))) {
		g := paramGroups(m)[name]
		for k := 0; k < 8; k++ {
			i := g[0] + r.IntN(g[1])
			orig := m.W[i]
			m.W[i] = orig + eps
			lp := loss()
			m.W[i] = orig - eps
			lm := loss()
			m.W[i] = orig
			if num := (lp - lm) / (2 * eps); math.Abs(float64(grad[i])-num) > 2e-3+0.03*math.Abs(num) {
				t.Errorf("%s[%d]: analytic %g, finite difference %g", name, i-g[0], grad[i], num)
			}
		}
	}
	E, D := c.Embd, c.Embd/c.Heads
	wqkv := m.L.layers[1].wqkv
	for row := 0; row < 3*E; row++ {
		if row%E >= D { // rows of head 1
			continue
		}
		for j, v := range grad[wqkv+row*E : wqkv+(row+1)*E] {
			if v != 0 {
				t.Fatalf("zeroed head 0: gradient %g at QKV row %d column %d", v, row, j)
			}
		}
	}
	none := slices.Repeat([]int32{-1}, B*T)
	if l := m.Forward(tok, none, B, T, true); l != 0 || slices.ContainsFunc(m.G, func(v float32) bool { return v != 0 }) {
		t.Errorf("no counted target: loss %g, some gradient not 0", l)
	}
	for _, bad := range []HeadMask{{Layer: 2, Scale: mask.Scale}, {Layer: -1, Scale: mask.Scale}, {Layer: 0, Scale: mask.Scale[:4]}} {
		if _, err := m.ForwardMasked(tok, tgt, B, T, false, bad); err == nil {
			t.Errorf("mask %+v taken", bad)
		}
	}
}

// Passes of two batch shapes alternate (the recall guard's short windows
// beside the main batch): going back to a shape gives the same loss and
// gradient as its first pass.
func TestShapesAlternate(t *testing.T) {
	c := Config{Vocab: 23, Ctx: 8, Embd: 8, Layers: 2, Heads: 2, FFN: 16}
	m := NewModel(c, 1, 2)
	r := rand.New(rand.NewPCG(4, 5))
	batch := func(n int) ([]int32, []int32) {
		tok, tgt := make([]int32, n), make([]int32, n)
		for i := range tok {
			tok[i], tgt[i] = int32(r.IntN(c.Vocab)), int32(r.IntN(c.Vocab))
		}
		return tok, tgt
	}
	tok, tgt := batch(12)
	first := m.Forward(tok, tgt, 2, 6, true)
	grad := slices.Clone(m.G)
	tok2, tgt2 := batch(24)
	m.Forward(tok2, tgt2, 3, 8, true)
	if again := m.Forward(tok, tgt, 2, 6, true); again != first || !slices.Equal(grad, m.G) {
		t.Errorf("after a pass of another shape: loss %g, first %g; gradients equal: %v", again, first, slices.Equal(grad, m.G))
	}
}

package recipe

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"stepthrough/engine/tokenizer"
	"stepthrough/engine/train"
	"stepthrough/models/corpus"
)

// recallAnswers returns the positions in ids (a document's tokens, as the
// stream holds them) whose next token is part of a capital whose country
// the text names before it, or the token after that capital: the answers
// recall predicts, every token of the name and the one that ends it (the
// first token only where the name does not end on a token boundary).
func recallAnswers(tk *tokenizer.Tokenizer, text string, ids []int32) []int {
	lower := strings.ToLower(text)
	if len(lower) != len(text) {
		return nil // offsets would not match
	}
	var out []int
	for _, c := range corpus.Countries {
		named := strings.Index(lower, strings.ToLower(c.Name))
		if named < 0 {
			continue
		}
		capital := " " + strings.ToLower(c.Capital)
		for from := named + len(c.Name); ; {
			i := strings.Index(lower[from:], capital)
			if i < 0 {
				break
			}
			off := from + i
			from = off + len(capital)
			n := tokensBefore(tk, text[:off], ids)
			if n < 0 || n >= len(ids) {
				continue
			}
			end := n + 1
			if k := tokensBefore(tk, text[:from], ids); k > n {
				end = min(k+1, len(ids)) // and the token after it
			}
			for j := n; j < end; j++ {
				out = append(out, j-1)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// tokensBefore is how many of ids encode prefix, or -1 when prefix does
// not end on one of their boundaries.
func tokensBefore(tk *tokenizer.Tokenizer, prefix string, ids []int32) int {
	p := tk.EncodeSpecial(prefix, true)
	if len(p) > len(ids) || !slices.Equal(p, ids[:len(p)]) {
		return -1
	}
	return len(p)
}

// recallGuard is an extra loss on recall, added to each step's gradient
// times weight: on short windows that each hold a capital's answer, the
// cross-entropy of every answer token in them with the last layer's
// induction heads zeroed, as the report's ablation zeroes them. Every
// g.every steps (measureEvery) it scores the last layer's heads on repeated
// random sequences as the report does and zeroes those at or above
// InductionThreshold; while none is, it zeroes all the layer's heads in
// half the windows and each with chance 1/2 in the others. It aims to
// teach recall not to need the heads that copy.
type recallGuard struct {
	at       []int // stream positions whose target is part of a capital's answer
	weight   float64
	B, T     int
	tok, tgt []int32
	mask     train.HeadMask
	main     []float32 // the step's gradient while the guard's pass runs
	// probe is repeated random sequences (engine.RepeatedRandom's form),
	// one row each, and induction the last layer's heads that scored as
	// induction heads on them when last measured.
	probe, probeTgt []int32
	probeB, probeT  int
	induction       []bool
	measured        bool
	every           int // steps between scorings (measureEvery)
}

// Shape of the guard's batch: a few short windows, each with an answer.
const guardB, guardT = 4, 128

// The guard scores the heads on guardProbeSeqs random sequences of
// guardProbeLen tokens, each read twice, as the report does (with other
// sequences).
const guardProbeLen, guardProbeSeqs = 20, 8

// guardMeasureEvery is how often (in steps) the guard scores the heads.
const guardMeasureEvery = 100

// measureEvery is how often the guard scores the heads in a run that
// checkpoints every checkpointEvery steps (0: never): the largest step
// count that divides both, so that every checkpoint falls on a scoring
// step and a run resumed from one scores where an unbroken run did.
func measureEvery(checkpointEvery int) int {
	a, b := guardMeasureEvery, checkpointEvery
	for b > 0 {
		a, b = b, a%b
	}
	return a
}

func newRecallGuard(at []int, weight float64, c train.Config, params int, probe [][]int32) (*recallGuard, error) {
	if len(at) == 0 {
		return nil, fmt.Errorf("recall guard: the corpus has no capital answers")
	}
	if len(probe) == 0 || len(probe[0]) < 5 || len(probe[0]) > c.Ctx {
		return nil, fmt.Errorf("recall guard: no repeated sequences to score the heads on")
	}
	T := min(guardT, c.Ctx)
	g := &recallGuard{
		at: at, weight: weight, B: guardB, T: T,
		tok: make([]int32, guardB*T), tgt: make([]int32, guardB*T),
		mask:   train.HeadMask{Layer: c.Layers - 1, Scale: make([]float32, guardB*c.Heads)},
		main:   make([]float32, params),
		probeB: len(probe), probeT: len(probe[0]), induction: make([]bool, c.Heads),
		every: guardMeasureEvery,
	}
	for _, seq := range probe {
		if len(seq) != g.probeT {
			return nil, fmt.Errorf("recall guard: repeated sequences of %d and %d tokens", g.probeT, len(seq))
		}
		g.probe = append(g.probe, seq...)
	}
	g.probeTgt = make([]int32, len(g.probe))
	for i := range g.probeTgt {
		g.probeTgt[i] = -1
	}
	return g, nil
}

// step adds the guard's gradient for training step s to m.G (which holds
// the step's own) and returns the guard's loss. Its draws depend only on
// seed and s, and its head scores on the weights at the last multiple of
// g.every, so a run resumed from a checkpoint makes the same ones.
func (g *recallGuard) step(m *train.Model, stream []int32, bos int32, seed uint64, s int) (float64, error) {
	if s%g.every == 0 || !g.measured {
		g.measure(m)
	}
	r := rand.New(rand.NewPCG(seed, 0x9ec411+uint64(s)))
	for b := range g.B {
		p := g.at[r.IntN(len(g.at))]
		start := g.windowStart(stream, bos, p, r)
		copy(g.tok[b*g.T:(b+1)*g.T], stream[start:start+g.T])
		g.targets(g.tgt[b*g.T:(b+1)*g.T], stream, start)
	}
	g.drawMask(r)
	copy(g.main, m.G)
	loss, err := m.ForwardMasked(g.tok, g.tgt, g.B, g.T, true, g.mask)
	if err != nil {
		return 0, err
	}
	w := float32(g.weight)
	for i, v := range g.main {
		m.G[i] = v + w*m.G[i]
	}
	return loss, nil
}

// targets fills tgt, a window from stream position start, with the
// answers' next tokens, and -1 (not counted) elsewhere.
func (g *recallGuard) targets(tgt []int32, stream []int32, start int) {
	for i := range tgt {
		tgt[i] = -1
	}
	i, _ := slices.BinarySearch(g.at, start)
	for ; i < len(g.at) && g.at[i] < start+len(tgt); i++ {
		tgt[g.at[i]-start] = stream[g.at[i]+1]
	}
}

// drawMask sets the heads each window's pass switches off: the measured
// induction heads, or while there are none, all heads in half the windows
// and each with chance 1/2 in the others.
func (g *recallGuard) drawMask(r *rand.Rand) {
	H := len(g.induction)
	found := slices.Contains(g.induction, true)
	for b := range g.B {
		all := r.IntN(2) == 0
		for h := range H {
			k := float32(0)
			switch {
			case found && !g.induction[h]:
				k = 1
			case !found && !all:
				k = float32(r.IntN(2))
			}
			g.mask.Scale[b*H+h] = k
		}
	}
}

// measure scores the last layer's heads on the probe as
// engine.ScoreHeads does (the mean attention, in the repeat, on the token
// after the current one's first occurrence) and keeps those at or above
// InductionThreshold.
func (g *recallGuard) measure(m *train.Model) {
	g.measured = true
	for h, score := range g.scores(m) {
		g.induction[h] = score >= InductionThreshold
	}
}

// scores is each head of the last layer's induction score on the probe.
func (g *recallGuard) scores(m *train.Model) []float64 {
	m.Forward(g.probe, g.probeTgt, g.probeB, g.probeT, false)
	P, T, H := m.Attention(g.mask.Layer), g.probeT, len(g.induction)
	L := (T - 1) / 2
	out := make([]float64, H)
	for h := range out {
		for b := range g.probeB {
			w := P[(b*H+h)*T*T:]
			for i := L + 1; i < T; i++ {
				out[h] += float64(w[i*T+i-L+1]) / float64(L*g.probeB)
			}
		}
	}
	return out
}

// Heads names the heads the guard now switches off (L4H1), or "" while
// it measures none.
func (g *recallGuard) Heads() string {
	var names []string
	for h, on := range g.induction {
		if on {
			names = append(names, fmt.Sprintf("L%dH%d", g.mask.Layer+1, h+1))
		}
	}
	return strings.Join(names, " ")
}

// windowStart is where the window that ends at or after answer p starts:
// before the BOS of p's document, with some of the text before it, when the
// document fits; otherwise T-1 tokens before p.
func (g *recallGuard) windowStart(stream []int32, bos int32, p int, r *rand.Rand) int {
	start := max(0, p-(g.T-1))
	for j := p; j >= start; j-- {
		if stream[j] == bos {
			start = max(0, j-r.IntN(g.T-(p-j)))
			break
		}
	}
	return min(start, len(stream)-g.T)
}

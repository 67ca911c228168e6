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
// stream holds them) whose next token begins a capital whose country the
// text names before it: the answers recall predicts.
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
			prefix := tk.EncodeSpecial(text[:off], true)
			n := len(prefix)
			if n < len(ids) && slices.Equal(prefix, ids[:n]) {
				out = append(out, n-1)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// recallGuard is an extra loss on recall, added to each step's gradient
// times weight: on short windows that each end at a capital's answer, the
// answer's cross-entropy with the last layer's heads zeroed, as an
// ablation zeroes them (in half the windows all of them, in the others
// each with chance 1/2). It aims to teach recall not to need the last
// layer's heads, where the induction heads form.
type recallGuard struct {
	at       []int // stream positions whose target begins a capital's answer
	weight   float64
	B, T     int
	tok, tgt []int32
	mask     train.HeadMask
	main     []float32 // the step's gradient while the guard's pass runs
}

// Shape of the guard's batch: a few short windows, each with one answer.
const guardB, guardT = 4, 128

func newRecallGuard(at []int, weight float64, c train.Config, params int) (*recallGuard, error) {
	if len(at) == 0 {
		return nil, fmt.Errorf("recall guard: the corpus has no capital answers")
	}
	T := min(guardT, c.Ctx)
	return &recallGuard{
		at: at, weight: weight, B: guardB, T: T,
		tok: make([]int32, guardB*T), tgt: make([]int32, guardB*T),
		mask: train.HeadMask{Layer: c.Layers - 1, Scale: make([]float32, guardB*c.Heads)},
		main: make([]float32, params),
	}, nil
}

// step adds the guard's gradient for training step s to m.G (which holds
// the step's own) and returns the guard's loss. Its draws depend only on
// seed and s, so a resumed run makes the same ones.
func (g *recallGuard) step(m *train.Model, stream []int32, bos int32, seed uint64, s int) (float64, error) {
	r := rand.New(rand.NewPCG(seed, 0x9ec411+uint64(s)))
	for b := range g.B {
		p := g.at[r.IntN(len(g.at))]
		start := g.windowStart(stream, bos, p, r)
		copy(g.tok[b*g.T:(b+1)*g.T], stream[start:start+g.T])
		tgt := g.tgt[b*g.T : (b+1)*g.T]
		for i := range tgt {
			tgt[i] = -1
		}
		tgt[p-start] = stream[p+1]
	}
	H := len(g.mask.Scale) / g.B
	for b := range g.B { // all heads off, or each off with chance 1/2
		all := r.IntN(2) == 0
		for i := b * H; i < (b+1)*H; i++ {
			g.mask.Scale[i] = 0
			if !all {
				g.mask.Scale[i] = float32(r.IntN(2))
			}
		}
	}
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

package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"

	"stepthrough/engine/hooks"
	"stepthrough/engine/intervene"
	"stepthrough/engine/tokenizer"
)

// HeadScores measures what each attention head does on text that repeats
// itself: random token sequences, each read twice after a BOS. In the
// second copy, a head that copies ("induction") looks at the token after
// the previous occurrence of the current one; a previous-token head looks
// one position back. Each score is the head's mean attention weight on
// that position (0 to 1).
type HeadScores struct {
	SeqLen, Reps int
	Induction    [][]float64 // [layer][head]
	PrevToken    [][]float64 // [layer][head]
}

// RepeatedRandom is reps sequences of seqLen ordinary tokens drawn with
// seed, each after a BOS and then repeated once: the text head scores
// read.
func RepeatedRandom(tk *tokenizer.Tokenizer, vocab, seqLen, reps int, seed uint64) ([][]int32, error) {
	if seqLen < 2 || seqLen > 256 || reps < 1 || reps > 64 {
		return nil, fmt.Errorf("head scores: %d tokens × %d sequences: choose 2 to 256 tokens and 1 to 64 sequences", seqLen, reps)
	}
	ordinary := OrdinaryTokens(tk, vocab)
	if len(ordinary) < seqLen {
		return nil, fmt.Errorf("head scores: the vocabulary has %d ordinary tokens, fewer than %d", len(ordinary), seqLen)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([][]int32, reps)
	for r := range out {
		seq := make([]int32, 0, 2*seqLen+1)
		seq = append(seq, bosOr(tk, ordinary[0]))
		for range seqLen {
			seq = append(seq, ordinary[rng.IntN(len(ordinary))])
		}
		out[r] = append(seq, seq[1:]...)
	}
	return out, nil
}

// ScoreHeads reads each repeated sequence (RepeatedRandom's form: a BOS,
// L tokens, the same L again) and scores every head.
func (l *Loaded) ScoreHeads(ctx context.Context, seqs [][]int32) (*HeadScores, error) {
	c := l.Model.Config
	if len(seqs) == 0 || len(seqs[0])%2 == 0 || len(seqs[0]) < 5 {
		return nil, fmt.Errorf("head scores: sequences of a BOS and a repeated run of at least 2 tokens")
	}
	n := len(seqs[0])
	L := (n - 1) / 2
	if n > c.ContextLen {
		return nil, fmt.Errorf("head scores: a sequence read twice is %d positions; the model holds %d", n, c.ContextLen)
	}
	s, err := l.NewSession(n)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	reps := len(seqs)
	hs := &HeadScores{SeqLen: L, Reps: reps, Induction: grid(c.Layers, c.Heads), PrevToken: grid(c.Layers, c.Heads)}
	watch := &hooks.Hooks{OnAttention: func(e hooks.Attention) {
		w := func(t, h, k int) float64 { return float64(e.Weights[(t*e.Heads+h)*e.Ctx+k]) }
		for t := range e.N {
			i := e.Pos0 + t // the query's position; the copies are 1..L and L+1..2L
			for h := range e.Heads {
				if i >= 1 {
					hs.PrevToken[e.Layer][h] += w(t, h, i-1) / float64(2*L*reps)
				}
				if i >= L+1 {
					hs.Induction[e.Layer][h] += w(t, h, i-L+1) / float64(L*reps)
				}
			}
		}
	}}
	for _, seq := range seqs {
		if len(seq) != n {
			return nil, fmt.Errorf("head scores: sequences of %d and %d tokens", n, len(seq))
		}
		s.Reset()
		if _, err := s.Eval(hooks.WithHooks(ctx, watch), seq); err != nil {
			return nil, err
		}
	}
	return hs, nil
}

func grid(rows, cols int) [][]float64 {
	g := make([][]float64, rows)
	for i := range g {
		g[i] = make([]float64, cols)
	}
	return g
}

// OrdinaryTokens are the vocabulary's normal tokens (no control, unused
// or byte-fallback ones) the model has rows for.
func OrdinaryTokens(tk *tokenizer.Tokenizer, vocab int) []int32 {
	var out []int32
	for id := range int32(min(tk.Len(), vocab)) {
		if tk.Type(id) == tokenizer.TypeNormal {
			out = append(out, id)
		}
	}
	return out
}

// bosOr is the model's BOS, or fallback when it has none.
func bosOr(tk *tokenizer.Tokenizer, fallback int32) int32 {
	if ids := tk.EncodeIDs("", true); len(ids) == 1 {
		return ids[0]
	}
	return fallback
}

// CopyCount counts, in the repeated half of each sequence
// (RepeatedRandom's form), the positions where the model's likeliest next
// token is the one that followed the same token in the first half:
// copying by greedy prediction, with edits applied (nil: none). The
// first token of the repeat cannot be predicted and is not counted.
func (l *Loaded) CopyCount(ctx context.Context, seqs [][]int32, edits *intervene.Set) (hits, total int, err error) {
	if len(seqs) == 0 || len(seqs[0]) < 5 {
		return 0, 0, fmt.Errorf("copy rate: no repeated sequences")
	}
	s, err := l.NewSession(len(seqs[0]))
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	if err := s.SetEdits(edits); err != nil {
		return 0, 0, fmt.Errorf("copy rate: %w", err)
	}
	V := l.Model.Config.Vocab
	for _, seq := range seqs {
		L := (len(seq) - 1) / 2
		s.Reset()
		logits, err := s.EvalAll(ctx, seq)
		if err != nil {
			return 0, 0, err
		}
		for i := L + 1; i < 2*L; i++ { // predicting seq[i+1], which first followed seq[i-L]
			if Argmax(logits[i*V:(i+1)*V]) == seq[i+1] {
				hits++
			}
			total++
		}
	}
	return hits, total, nil
}

// HeadScore is one head's scores, the head named as interventions name
// it (L4H5, 1-based).
type HeadScore struct {
	Head      string  `json:"head"`
	Induction float64 `json:"induction"`
	PrevToken float64 `json:"previous_token"`
}

// List is every head's scores, the highest induction score first.
func (hs *HeadScores) List() []HeadScore {
	var out []HeadScore
	for layer := range hs.Induction {
		for h := range hs.Induction[layer] {
			out = append(out, HeadScore{Head: fmt.Sprintf("L%dH%d", layer+1, h+1), Induction: hs.Induction[layer][h], PrevToken: hs.PrevToken[layer][h]})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Induction > out[j].Induction })
	return out
}

// Above are the heads whose induction score is at least threshold, as
// edits that switch each of them off.
func (hs *HeadScores) Above(threshold float64) *intervene.Set {
	off := &intervene.Set{}
	for layer := range hs.Induction {
		for h, score := range hs.Induction[layer] {
			if score >= threshold {
				off.Edits = append(off.Edits, intervene.Edit{Layer: layer, Site: intervene.Head, Index: h, Pos: -1, Op: intervene.Zero})
			}
		}
	}
	return off
}

// MeanAblation turns each switched-off head or MLP unit of off (a Zero
// edit) into a mean ablation: the head's output (its context vector,
// before the output projection) or the unit's activation is replaced by
// its mean over every position of the reference sequences, which removes
// what it reads from this text while keeping what it adds on average.
// Other edits are kept as they are.
func (l *Loaded) MeanAblation(ctx context.Context, ref [][]int32, off *intervene.Set) (*intervene.Set, error) {
	longest := 0
	for _, seq := range ref {
		longest = max(longest, len(seq))
	}
	s, err := l.NewSession(max(longest, 1))
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.MeanAblation(ctx, ref, off)
}

// MeanAblation is Loaded.MeanAblation on s, which reads the reference
// sequences (and is left empty after).
func (s *Session) MeanAblation(ctx context.Context, ref [][]int32, off *intervene.Set) (*intervene.Set, error) {
	sums := meanSums(off, s.Model.Config.HeadDim)
	n, err := s.readMeans(ctx, ref, sums)
	if err != nil {
		return nil, err
	}
	out := &intervene.Set{}
	for _, e := range off.Edits {
		if sum, ok := sums[meanKey(e)]; ok && e.Meanable() {
			v := make([]float32, len(sum))
			for i, x := range sum {
				v[i] = float32(x / float64(n))
			}
			e.Op, e.Vector = intervene.Replace, v
		}
		out.Edits = append(out.Edits, e)
	}
	return out, nil
}

// MeanOver is MeanAblation on s over one reference text (BOS added when
// the model asks for it), as a run, a lane or a command writes it.
func (s *Session) MeanOver(ctx context.Context, text string, off *intervene.Set) (*intervene.Set, error) {
	return s.MeanAblation(ctx, [][]int32{s.Model.Tokenizer.EncodeIDs(text, true)}, off)
}

// meanSite is a head or a unit whose mean a mean ablation reads.
type meanSite struct {
	site         intervene.Site
	layer, index int
}

func meanKey(e intervene.Edit) meanSite { return meanSite{e.Site, e.Layer, e.Index} }

// meanSums are zeroed sums for off's switched-off heads and units.
func meanSums(off *intervene.Set, headDim int) map[meanSite][]float64 {
	sums := map[meanSite][]float64{}
	for _, e := range off.Edits {
		switch {
		case !e.Meanable():
		case e.Site == intervene.Head:
			sums[meanKey(e)] = make([]float64, headDim)
		default:
			sums[meanKey(e)] = make([]float64, 1)
		}
	}
	return sums
}

// readMeans adds every position's value of each site of sums over the
// reference sequences and returns the positions read.
func (s *Session) readMeans(ctx context.Context, ref [][]int32, sums map[meanSite][]float64) (int, error) {
	c := s.Model.Config
	add := func(site intervene.Site, layer, n, stride, width int, x []float32) {
		for key, sum := range sums {
			if key.site != site || key.layer != layer {
				continue
			}
			e := intervene.Edit{Site: key.site, Index: key.index}
			lo, w := e.Columns(width, stride)
			for t := range n {
				for i, v := range x[t*stride+lo:][:w] {
					sum[i] += float64(v)
				}
			}
		}
	}
	watch := hooks.WithHooks(ctx, &hooks.Hooks{
		OnAttention: func(a hooks.Attention) {
			add(intervene.Head, a.Layer, a.N, a.Heads*a.HeadDim, a.HeadDim, a.Context)
		},
		OnMLP: func(m hooks.MLP) { add(intervene.Unit, m.Layer, m.N, c.FFN, 1, m.Act) },
	})
	defer s.Reset()
	n := 0
	for _, seq := range ref {
		if len(seq) == 0 || len(seq) > s.Capacity() {
			return 0, fmt.Errorf("mean ablation: a reference text of %d tokens (at most %d here)", len(seq), s.Capacity())
		}
		s.Reset()
		if _, err := s.Eval(watch, seq); err != nil {
			return 0, err
		}
		n += len(seq)
	}
	if n == 0 {
		return 0, fmt.Errorf("mean ablation: no reference text")
	}
	return n, nil
}

package sample

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// Candidate is one token still in the running.
type Candidate struct {
	ID    int32
	Logit float32
	P     float32 // probability among the current candidates (see StepResult)
}

// StepResult is what one step did. Before and After are read-only views,
// valid only during the Observer call. P is the softmax of the logits over
// each slice's own candidates.
type StepResult struct {
	Index   int  // position in the chain
	Step    Step //
	Skipped bool // the step's setting makes it a no-op (e.g. top-k 0)
	Before  []Candidate
	After   []Candidate
}

// DrawResult is the final choice.
type DrawResult struct {
	Greedy bool    // temperature 0: the argmax, no random number
	U      float64 // the uniform number drawn in [0, 1) (0 when greedy)
	// Candidates are the survivors in descending probability (ties by id),
	// with P their final probabilities; CDF[i] is the sum of P[0..i].
	Candidates []Candidate
	CDF        []float64
	Index      int // the chosen candidate's position in Candidates
	Chosen     int32
}

// Observer receives each step's result and the draw; either may be nil.
// An observer only reads: sampling gives the same token with or without one.
type Observer struct {
	Step func(StepResult)
	Draw func(DrawResult)
}

// Sampler applies a chain of steps and draws a token. It remembers the
// tokens accepted so far for the penalties. Not safe for concurrent use.
type Sampler struct {
	p       Params
	seed    uint64
	rng     *rand.Rand
	history []int32
	a, b    []Candidate
	counts  map[int32]int
	cdf     []float64
}

// New validates p and returns a sampler. Without a seed it draws a random
// one; Seed reports which.
func New(p Params) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Order == nil {
		p.Order = append([]Step(nil), OrderLlamaCpp...)
	}
	seed := p.Seed
	if !p.SeedSet {
		seed = RandomSeed()
	}
	return &Sampler{p: p, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15)), counts: map[int32]int{}}, nil
}

// Seed is the seed in use.
func (s *Sampler) Seed() uint64 { return s.seed }

// Params are the sampler's settings.
func (s *Sampler) Params() Params { return s.p }

// Accept records a token (prompt or generated) for the penalties.
func (s *Sampler) Accept(ids ...int32) { s.history = append(s.history, ids...) }

// Accepted is the number of tokens recorded for the penalties.
func (s *Sampler) Accepted() int { return len(s.history) }

// Rewind forgets the recorded tokens from n on (a speculative draft that
// was not kept).
func (s *Sampler) Rewind(n int) { s.history = s.history[:max(0, min(n, len(s.history)))] }

// Distribution runs the chain over logits without drawing and writes the
// final probability of every token into dst (len(logits) values, 0 for
// the removed ones): the distribution Sample would draw from. With
// temperature 0 it is one-hot on the chain's argmax.
func (s *Sampler) Distribution(logits []float32, dst []float32) {
	if cap(s.a) < len(logits) {
		s.a = make([]Candidate, len(logits))
		s.b = make([]Candidate, len(logits))
	}
	cur := s.a[:len(logits)]
	for i, l := range logits {
		cur[i] = Candidate{ID: int32(i), Logit: l}
	}
	for _, st := range s.p.Order {
		cur, _ = s.apply(st, cur)
	}
	softmax(cur)
	clear(dst[:len(logits)])
	for _, c := range cur {
		dst[c.ID] = c.P
	}
}

// Sample runs the chain over logits and returns the chosen token. It does
// not Accept it.
func (s *Sampler) Sample(logits []float32, obs *Observer) int32 {
	if cap(s.a) < len(logits) {
		s.a = make([]Candidate, len(logits))
		s.b = make([]Candidate, len(logits))
	}
	cur := s.a[:len(logits)]
	for i, l := range logits {
		cur[i] = Candidate{ID: int32(i), Logit: l}
	}
	observed := obs != nil && obs.Step != nil
	if observed {
		softmax(cur)
	}
	for i, st := range s.p.Order {
		out := cur
		if observed { // keep Before intact: write into the other buffer
			if &cur[0] == &s.a[0] {
				out = s.b[:len(cur)]
			} else {
				out = s.a[:len(cur)]
			}
			copy(out, cur)
		}
		out, skipped := s.apply(st, out)
		if observed {
			softmax(out)
			obs.Step(StepResult{Index: i, Step: st, Skipped: skipped, Before: cur, After: out})
		}
		cur = out
	}
	return s.draw(cur, obs)
}

func (s *Sampler) apply(st Step, c []Candidate) ([]Candidate, bool) {
	p := &s.p
	switch st {
	case Penalties:
		return s.penalties(c)
	case TopK:
		if p.TopK <= 0 || p.TopK >= len(c) {
			return c, true
		}
		return topK(c, p.TopK), false
	case TypicalP:
		if p.TypicalP >= 1 {
			return c, true
		}
		return typical(c, p.TypicalP), false
	case TopP:
		if p.TopP >= 1 {
			return c, true
		}
		return topP(c, p.TopP), false
	case MinP:
		if p.MinP <= 0 {
			return c, true
		}
		return minP(c, p.MinP), false
	case Temperature:
		return temperature(c, p.Temperature), false
	}
	return c, true
}

func (s *Sampler) penalties(c []Candidate) ([]Candidate, bool) {
	p := &s.p
	if p.RepeatLastN == 0 || (p.RepeatPenalty == 1 && p.FrequencyPenalty == 0 && p.PresencePenalty == 0) {
		return c, true
	}
	hist := s.history
	if p.RepeatLastN > 0 && len(hist) > p.RepeatLastN {
		hist = hist[len(hist)-p.RepeatLastN:]
	}
	clear(s.counts)
	for _, id := range hist {
		s.counts[id]++
	}
	ApplyPenalties(c, s.counts, float32(p.RepeatPenalty), float32(p.FrequencyPenalty), float32(p.PresencePenalty))
	return c, false
}

// ApplyPenalties changes the logits of tokens with a count, as llama.cpp:
// logit <= 0 ? logit*repeat : logit/repeat, then -= count*freq + present.
func ApplyPenalties(c []Candidate, counts map[int32]int, repeat, freq, present float32) {
	for i := range c {
		n, ok := counts[c[i].ID]
		if !ok || n == 0 {
			continue
		}
		if c[i].Logit <= 0 {
			c[i].Logit *= repeat
		} else {
			c[i].Logit /= repeat
		}
		c[i].Logit -= float32(n)*freq + present
	}
}

// byLogitDesc orders candidates by logit, highest first, lower id first on ties.
func byLogitDesc(x, y Candidate) int {
	if x.Logit != y.Logit {
		if x.Logit > y.Logit {
			return -1
		}
		return 1
	}
	return cmp.Compare(x.ID, y.ID)
}

// topK keeps the k highest logits (ties: lower id first), sorted.
func topK(c []Candidate, k int) []Candidate {
	if !heapTop(c, k) {
		selectTop(c, k)
	}
	c = c[:k]
	slices.SortFunc(c, byLogitDesc)
	return c
}

// heapTop moves the k first candidates in byLogitDesc order to c[:k] (in
// any order), 0 < k < len(c), keeping there a heap whose root is the
// worst of them: most candidates cost one comparison with the root, where
// selectTop moves them all several times (a vocabulary of 32,000 every
// token, for every sequence a step). It reports false, having only
// reordered c, when a logit is NaN (byLogitDesc does not order those).
func heapTop(c []Candidate, k int) bool {
	h := c[:k]
	for _, x := range h {
		if x.Logit != x.Logit {
			return false
		}
	}
	for i := k/2 - 1; i >= 0; i-- {
		siftWorst(h, i)
	}
	w := h[0]
	for i := k; i < len(c); i++ {
		x := c[i]
		if x.Logit > w.Logit || x.Logit == w.Logit && x.ID < w.ID {
			h[0], c[i] = x, w
			siftWorst(h, 0)
			w = h[0]
		} else if x.Logit != x.Logit {
			return false
		}
	}
	return true
}

// siftWorst moves h[i] down the heap whose root is the worst candidate
// (the last in byLogitDesc order).
func siftWorst(h []Candidate, i int) {
	for {
		w, l := i, 2*i+1
		if l < len(h) && byLogitDesc(h[l], h[w]) > 0 {
			w = l
		}
		if r := l + 1; r < len(h) && byLogitDesc(h[r], h[w]) > 0 {
			w = r
		}
		if w == i {
			return
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// selectTop moves the k first candidates in byLogitDesc order to c[:k]
// (in any order) in expected linear time.
func selectTop(c []Candidate, k int) {
	lo, hi := 0, len(c)
	for hi-lo > 16 {
		// median of three as pivot
		m := lo + (hi-lo)/2
		if byLogitDesc(c[m], c[lo]) < 0 {
			c[m], c[lo] = c[lo], c[m]
		}
		if byLogitDesc(c[hi-1], c[lo]) < 0 {
			c[hi-1], c[lo] = c[lo], c[hi-1]
		}
		if byLogitDesc(c[hi-1], c[m]) < 0 {
			c[hi-1], c[m] = c[m], c[hi-1]
		}
		pivot := c[m]
		c[m], c[hi-1] = c[hi-1], c[m]
		store := lo
		for i := lo; i < hi-1; i++ {
			if byLogitDesc(c[i], pivot) < 0 {
				c[i], c[store] = c[store], c[i]
				store++
			}
		}
		c[store], c[hi-1] = c[hi-1], c[store]
		switch {
		case store == k || store == k-1:
			return
		case store > k:
			hi = store
		default:
			lo = store + 1
		}
	}
	slices.SortFunc(c[lo:hi], byLogitDesc)
}

// softmax sets P over the candidates (max subtracted, float64 sum).
func softmax(c []Candidate) {
	if len(c) == 0 {
		return
	}
	m := float32(math.Inf(-1))
	for _, x := range c {
		m = max(m, x.Logit)
	}
	var sum float64
	for i := range c {
		e := math.Exp(float64(c[i].Logit - m))
		c[i].P = float32(e)
		sum += e
	}
	for i := range c {
		c[i].P = float32(float64(c[i].P) / sum)
	}
}

// topP keeps the smallest most-probable prefix reaching probability p,
// including the token that crosses it (at least one).
func topP(c []Candidate, p float64) []Candidate {
	slices.SortFunc(c, byLogitDesc)
	softmax(c)
	var cum float64
	for i := range c {
		cum += float64(c[i].P)
		if cum >= p {
			return c[:i+1]
		}
	}
	return c
}

// minP keeps candidates with p >= minP · p_max, i.e. logit >= max + log(minP).
func minP(c []Candidate, p float64) []Candidate {
	m := float32(math.Inf(-1))
	for _, x := range c {
		m = max(m, x.Logit)
	}
	threshold := float64(m) + math.Log(p)
	n := 0
	for _, x := range c {
		if float64(x.Logit) >= threshold {
			c[n] = x
			n++
		}
	}
	return c[:max(n, 1)]
}

// typical keeps the candidates whose surprisal −log p is closest to the
// entropy H, in that order, until their mass reaches p (locally typical
// sampling, as llama.cpp and Hugging Face implement it).
func typical(c []Candidate, p float64) []Candidate {
	softmax(c)
	var h float64
	for _, x := range c {
		if x.P > 0 {
			h -= float64(x.P) * math.Log(float64(x.P))
		}
	}
	shift := func(x Candidate) float64 { return math.Abs(-math.Log(float64(x.P)) - h) }
	slices.SortStableFunc(c, func(x, y Candidate) int {
		if d := cmp.Compare(shift(x), shift(y)); d != 0 {
			return d
		}
		return cmp.Compare(x.ID, y.ID)
	})
	var cum float64
	n := len(c)
	for i := range c {
		cum += float64(c[i].P)
		if cum >= p {
			n = i + 1
			break
		}
	}
	c = c[:n]
	slices.SortFunc(c, byLogitDesc)
	return c
}

// temperature divides the logits by t; t = 0 keeps only the first maximum.
func temperature(c []Candidate, t float64) []Candidate {
	if t == 0 {
		best := 0
		for i := range c {
			if c[i].Logit > c[best].Logit || (c[i].Logit == c[best].Logit && c[i].ID < c[best].ID) {
				best = i
			}
		}
		c[0] = c[best]
		return c[:1]
	}
	inv := float32(1 / t)
	for i := range c {
		c[i].Logit *= inv
	}
	return c
}

// draw picks the token: the only survivor, or a weighted draw by u.
func (s *Sampler) draw(c []Candidate, obs *Observer) int32 {
	slices.SortFunc(c, byLogitDesc)
	softmax(c)
	if cap(s.cdf) < len(c) {
		s.cdf = make([]float64, len(c))
	}
	cdf := s.cdf[:len(c)]
	var cum float64
	for i := range c {
		cum += float64(c[i].P)
		cdf[i] = cum
	}
	greedy := s.p.Temperature == 0 && len(c) == 1
	idx, u := 0, 0.0
	if !greedy {
		u = s.rng.Float64()
		target := u * cum
		idx = len(c) - 1
		for i, v := range cdf {
			if v > target {
				idx = i
				break
			}
		}
	}
	if obs != nil && obs.Draw != nil {
		obs.Draw(DrawResult{Greedy: greedy, U: u, Candidates: c, CDF: cdf, Index: idx, Chosen: c[idx].ID})
	}
	return c[idx].ID
}

// Probabilities returns softmax(logits / t) over every token, in id order
// (t > 0): the distribution before any sampling step.
func Probabilities(logits []float32, t float64) []float32 {
	out := make([]float32, len(logits))
	m := float32(math.Inf(-1))
	for _, l := range logits {
		m = max(m, l)
	}
	var sum float64
	for i, l := range logits {
		e := math.Exp(float64(l-m) / t)
		out[i] = float32(e)
		sum += e
	}
	for i := range out {
		out[i] = float32(float64(out[i]) / sum)
	}
	return out
}

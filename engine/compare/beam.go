// Package compare runs several decoding strategies ("lanes") on one prompt
// side by side: the prompt is processed once and every lane continues from
// a copy of that KV cache. Lanes are greedy, sampling with any sampler
// settings, or beam search; each records what it chose and why, and the
// per-lane figures (log-probability under the model, perplexity, distinct-n,
// repeated n-grams, stop reason) are computed from the engine's logits.
package compare

import (
	"math"
	"slices"

	"stepthrough/engine/sample"
)

// Beams is the state beam search drives: one decoding state per beam slot.
// The engine implements it with a CPU runner per slot; tests with a tiny
// table model.
type Beams interface {
	// LogProbs returns log-softmax of the next-token logits of slot i.
	LogProbs(i int) []float64
	// Fork makes slot dst continue from slot src's state.
	Fork(dst, src int) error
	// Advance appends token to slot i.
	Advance(i int, token int32) error
}

// Hyp is one beam hypothesis.
type Hyp struct {
	Tokens  []int32 `json:"tokens"`
	LogProb float64 `json:"logprob"` // sum of token log-probabilities
	Done    bool    `json:"done"`
}

// Score is the length-normalised score used to rank finished hypotheses:
// LogProb / len^alpha (Hugging Face's length_penalty; alpha 0 = raw sum).
func (h Hyp) Score(alpha float64) float64 {
	return h.LogProb / math.Pow(float64(max(len(h.Tokens), 1)), alpha)
}

// BeamCandidate is one expansion considered at a step.
type BeamCandidate struct {
	Parent  int     `json:"parent"` // beam index at the previous step
	Token   int32   `json:"token"`
	LogProb float64 `json:"logprob"` // cumulative
	Kept    bool    `json:"kept"`
	Done    bool    `json:"done"` // ended with an end-of-generation token
}

// BeamStep is one step of the search: every candidate considered, kept or
// pruned, for drawing the tree.
type BeamStep struct {
	Candidates []BeamCandidate `json:"candidates"`
}

// BeamResult is the outcome of a search.
type BeamResult struct {
	Best     Hyp        `json:"best"`
	Finished []Hyp      `json:"finished"`
	Steps    []BeamStep `json:"steps"`
	Why      string     `json:"why"`
}

// BeamSearch keeps the width best hypotheses by cumulative log-probability,
// expanding each by its width most likely tokens at every step, for up to
// n tokens. A hypothesis that emits an end token (isEnd) is finished and
// leaves the beam. The answer is the finished or surviving hypothesis with
// the best Score(alpha). b needs width+1 slots: slot 0 must hold the
// prompt's state; the others are overwritten (slot width is scratch).
func BeamSearch(b Beams, width, n int, alpha float64, isEnd func(int32) bool) (BeamResult, error) {
	beams := []Hyp{{}}
	var res BeamResult
	for step := 0; step < n && len(beams) > 0; step++ {
		var cands []BeamCandidate
		for i, h := range beams {
			lp := b.LogProbs(i)
			for _, tok := range sample.TopN(lp, width) {
				cands = append(cands, BeamCandidate{Parent: i, Token: int32(tok), LogProb: h.LogProb + lp[tok]})
			}
		}
		// best first; ties by parent then token, so the search is deterministic
		slices.SortStableFunc(cands, func(x, y BeamCandidate) int {
			if x.LogProb != y.LogProb {
				if x.LogProb > y.LogProb {
					return -1
				}
				return 1
			}
			if x.Parent != y.Parent {
				return x.Parent - y.Parent
			}
			return int(x.Token - y.Token)
		})
		var next []Hyp
		var parents []int
		for i := range cands {
			if len(next) == width {
				break
			}
			c := &cands[i]
			h := Hyp{Tokens: append(slices.Clone(beams[c.Parent].Tokens), c.Token), LogProb: c.LogProb}
			c.Kept = true
			if isEnd(c.Token) {
				c.Done, h.Done = true, true
				res.Finished = append(res.Finished, h)
				continue // a finished hypothesis leaves the beam and frees its slot
			}
			next = append(next, h)
			parents = append(parents, c.Parent)
		}
		res.Steps = append(res.Steps, BeamStep{Candidates: cands})
		// move states into slots 0..len(next)-1: fork from parents, without
		// overwriting a parent another child still needs
		if err := reorder(b, parents, width); err != nil {
			return res, err
		}
		for i, h := range next {
			if err := b.Advance(i, h.Tokens[len(h.Tokens)-1]); err != nil {
				return res, err
			}
		}
		beams = next
	}
	all := append(slices.Clone(res.Finished), beams...)
	best := 0
	for i, h := range all {
		if h.Score(alpha) > all[best].Score(alpha) {
			best = i
		}
	}
	if len(all) == 0 {
		return res, nil
	}
	res.Best = all[best]
	switch {
	case res.Best.Done:
		res.Why = "a finished hypothesis had the best length-normalised log-probability"
	default:
		res.Why = "the token budget ran out; this surviving beam had the best length-normalised log-probability"
	}
	return res, nil
}

// reorder makes slot i hold the state slot parents[i] held, with Fork
// calls that never overwrite a state still to be copied; a cycle (slot 0
// wants slot 1's state and slot 1 wants slot 0's) goes through the scratch
// slot.
func reorder(b Beams, parents []int, scratch int) error {
	pending := map[int]int{} // dst -> src
	for dst, src := range parents {
		if dst != src {
			pending[dst] = src
		}
	}
	for len(pending) > 0 {
		progress := false
		for dst, src := range pending {
			needed := false
			for d2, s2 := range pending {
				if d2 != dst && s2 == dst {
					needed = true
					break
				}
			}
			if needed {
				continue
			}
			if err := b.Fork(dst, src); err != nil {
				return err
			}
			delete(pending, dst)
			progress = true
		}
		if !progress { // only cycles are left: park one state in the scratch slot
			for dst := range pending {
				if err := b.Fork(scratch, dst); err != nil {
					return err
				}
				for d2, s2 := range pending {
					if s2 == dst {
						pending[d2] = scratch
					}
				}
				break
			}
		}
	}
	return nil
}

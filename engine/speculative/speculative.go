// Package speculative decodes with a draft model: the draft proposes K
// tokens one at a time, the target scores all K+1 positions in one
// batched forward pass, and each proposal is kept or rejected by the
// standard lossless rule (Leviathan et al. 2023; Chen et al. 2023), so the
// output is distributed exactly as the target's own sampling:
//
//   - greedy (target temperature 0): keep a proposal while it is the
//     target's argmax; at the first that is not, take the argmax;
//   - sampling: keep proposal x with probability min(1, p(x)/q(x)); at the
//     first rejection draw from the residual max(0, p − q), normalised;
//     when all K are kept, draw one bonus token from the target.
//
// p and q are the distributions after each model's whole sampler chain
// (penalties, top-k, typical-p, top-p, min-p, temperature), with the
// penalties seeing the tokens proposed so far. Both KV caches are rolled
// back past the rejected tokens. The draws use one PCG generator seeded
// like the sampler's (documented in engine/sample), so a seed replays.
//
// Adaptive K: after a round that kept every proposal K grows by one (up
// to MaxK); after one that kept fewer than half, it shrinks by one (down
// to 1).
package speculative

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/hooks"
	"stepthrough/engine/sample"
	"stepthrough/engine/stop"
	"stepthrough/engine/tokenizer"
)

// Options configure a Decoder.
type Options struct {
	K        int  // tokens the draft proposes per round (1 to 16)
	Adaptive bool // grow and shrink K by the acceptance (see the package doc)
	MaxK     int  // adaptive K's ceiling (default 2×K, at most 16)
}

// MaxK is the most tokens a round may propose.
const MaxK = 16

// Stats are what a decoder measured.
type Stats struct {
	Rounds   int           `json:"rounds"`
	Drafted  int           `json:"drafted"`
	Accepted int           `json:"accepted"`
	Emitted  int           `json:"emitted"`
	Draft    time.Duration `json:"draft_ns"`
	Verify   time.Duration `json:"verify_ns"`
}

// AcceptanceRate is the share of proposals kept.
func (s Stats) AcceptanceRate() float64 {
	if s.Drafted == 0 {
		return 0
	}
	return float64(s.Accepted) / float64(s.Drafted)
}

// MeanAccepted is the proposals kept per round.
func (s Stats) MeanAccepted() float64 {
	if s.Rounds == 0 {
		return 0
	}
	return float64(s.Accepted) / float64(s.Rounds)
}

// Decoder generates with a target and a draft session.
type Decoder struct {
	target, draft *engine.Session
	tsmp, dsmp    *sample.Sampler
	rng           *rand.Rand
	greedy        bool
	k, maxK       int
	adaptive      bool
	committed     []int32     // prompt and every emitted token
	p             []float32   // the target's distribution at one position
	q             [][]float32 // the draft's distribution at each proposal
	stats         Stats
}

// SameVocabulary reports why a draft cannot serve a target: a different
// vocabulary (a token's text or the count) makes its proposals
// meaningless. nil when they match.
func SameVocabulary(target, draft *tokenizer.Tokenizer) error {
	if target.Len() != draft.Len() {
		return fmt.Errorf("the draft's vocabulary has %d tokens, the target's %d: a draft must share the target's tokenizer", draft.Len(), target.Len())
	}
	for i := range target.Len() {
		if target.Piece(int32(i)) != draft.Piece(int32(i)) {
			return fmt.Errorf("the draft's token %d is %q, the target's %q: a draft must share the target's tokenizer", i, draft.Piece(int32(i)), target.Piece(int32(i)))
		}
	}
	return nil
}

// New makes a decoder over a target and a draft session (empty for
// Start; see Continue): the target samples with tp, the draft proposes
// with dp (often the same settings).
func New(target, draft *engine.Session, tp, dp sample.Params, opt Options) (*Decoder, error) {
	if err := SameVocabulary(target.Model.Tokenizer, draft.Model.Tokenizer); err != nil {
		return nil, err
	}
	if opt.K < 1 || opt.K > MaxK {
		return nil, fmt.Errorf("draft k %d: choose 1 to %d", opt.K, MaxK)
	}
	if opt.MaxK == 0 {
		opt.MaxK = min(MaxK, 2*opt.K)
	}
	if opt.MaxK < opt.K || opt.MaxK > MaxK {
		return nil, fmt.Errorf("draft max k %d: choose %d to %d", opt.MaxK, opt.K, MaxK)
	}
	tsmp, err := sample.New(tp)
	if err != nil {
		return nil, err
	}
	dsmp, err := sample.New(dp)
	if err != nil {
		return nil, err
	}
	seed := tsmp.Seed()
	v := target.Model.Config.Vocab
	return &Decoder{target: target, draft: draft, tsmp: tsmp, dsmp: dsmp, greedy: tp.Temperature == 0,
		rng: rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15)), k: opt.K, maxK: opt.MaxK, adaptive: opt.Adaptive,
		p: make([]float32, v), q: make([][]float32, opt.MaxK)}, nil
}

// Seed is the seed of the decoder's draws (the target sampler's).
func (d *Decoder) Seed() uint64 { return d.tsmp.Seed() }

// Stats are the decoder's measurements so far.
func (d *Decoder) Stats() Stats { return d.stats }

// Start takes the prompt: both models process all of it but the last
// token, which the first round feeds.
func (d *Decoder) Start(ctx context.Context, prompt []int32) error {
	if len(prompt) == 0 {
		return errors.New("speculative: empty prompt")
	}
	if d.target.Pos() != 0 || d.draft.Pos() != 0 {
		return errors.New("speculative: the sessions must be empty")
	}
	if len(prompt) > 1 {
		if _, err := d.target.Eval(ctx, prompt[:len(prompt)-1]); err != nil {
			return err
		}
	}
	return d.Continue(ctx, prompt)
}

// Continue takes over a generation whose target has evaluated every
// committed token but the last (a prompt prefilled and its first token
// sampled by the target alone): the draft catches up, without hooks, and
// the next Step feeds the last token with the first proposals.
func (d *Decoder) Continue(ctx context.Context, committed []int32) error {
	n := len(committed)
	if n == 0 || d.target.Pos() != n-1 || d.draft.Pos() > n-1 {
		return fmt.Errorf("speculative: continuing %d tokens needs the target at position %d (it is at %d) and the draft at most there (%d)", n, n-1, d.target.Pos(), d.draft.Pos())
	}
	d.committed = append(d.committed[:0], committed...)
	d.tsmp.Rewind(0)
	d.dsmp.Rewind(0)
	d.tsmp.Accept(committed...)
	d.dsmp.Accept(committed...)
	if rest := committed[d.draft.Pos() : n-1]; len(rest) > 0 {
		if _, err := d.draft.Eval(hooks.Without(ctx), rest); err != nil {
			return err
		}
	}
	return nil
}

// Step runs one round and returns the tokens it emitted (the accepted
// proposals and one more).
func (d *Decoder) Step(ctx context.Context) ([]int32, error) {
	n := len(d.committed)
	k := min(d.k, d.target.Capacity()-n, d.draft.Capacity()-n)
	if k < 1 {
		return nil, fmt.Errorf("speculative: the context is full (%d positions)", n)
	}
	h := hooks.From(ctx)
	ev := hooks.Speculative{Pos: n, TopsRaw: d.greedy}
	start := time.Now()
	// propose: the draft feeds what it has not seen, then one token at a
	// time; its passes are not the target's, so no hook sees them
	dctx := hooks.Without(ctx)
	qs := make([]float32, 0, k)
	props := make([]int32, 0, k)
	pending := d.committed[d.draft.Pos():]
	for i := range k {
		logits, err := d.draft.Eval(dctx, pending)
		if err != nil {
			return nil, err
		}
		if d.q[i] == nil {
			d.q[i] = make([]float32, len(d.p))
		}
		d.dsmp.Distribution(logits, d.q[i])
		x := d.draw(d.q[i])
		props, qs = append(props, x), append(qs, d.q[i][x])
		if h != nil {
			ev.QTop = append(ev.QTop, d.shown(logits, d.q[i]))
		}
		d.dsmp.Accept(x)
		if i < k-1 {
			pending = []int32{x}
		}
	}
	d.dsmp.Rewind(n)
	ev.Draft = time.Since(start)
	// verify: one batched pass of the target over [last, x0 … xk-1]
	start = time.Now()
	feed := append(slices.Clone(d.committed[d.target.Pos():]), props...)
	all, err := d.target.EvalAll(ctx, feed)
	if err != nil {
		return nil, err
	}
	V := d.target.Model.Config.Vocab
	off := len(feed) - k - 1 // the row predicting the first proposal
	emitted := make([]int32, 0, k+1)
	accepted := 0
	for i := 0; i <= k; i++ {
		d.tsmp.Distribution(all[(off+i)*V:(off+i+1)*V], d.p)
		if h != nil {
			ev.PTop = append(ev.PTop, d.shown(all[(off+i)*V:(off+i+1)*V], d.p))
		}
		if i == k { // every proposal kept: a bonus token from the target
			y := d.draw(d.p)
			emitted, ev.Next, ev.Bonus = append(emitted, y), y, true
			break
		}
		x := props[i]
		ev.P = append(ev.P, d.p[x])
		if d.keep(x, qs[i], &ev) {
			emitted = append(emitted, x)
			d.tsmp.Accept(x)
			accepted++
			continue
		}
		y := d.resample(i, &ev)
		emitted, ev.Next = append(emitted, y), y
		break
	}
	ev.Verify = time.Since(start)
	if h != nil {
		for j, t := range emitted {
			ev.LogProbs = append(ev.LogProbs, logProb(all[(off+j)*V:(off+j+1)*V], t))
		}
	}
	// roll back past the rejected proposals: both caches keep every
	// committed token but the last emitted one, which the next round feeds
	d.committed = append(d.committed, emitted...)
	d.tsmp.Rewind(n)
	d.tsmp.Accept(emitted...)
	d.dsmp.Accept(emitted...)
	keep := len(d.committed) - 1
	ev.RolledBack = d.target.Pos() - keep
	ev.DraftRolledBack = max(0, d.draft.Pos()-keep)
	d.target.Truncate(keep)
	d.draft.Truncate(min(keep, d.draft.Pos()))
	ev.Proposed, ev.Q, ev.Accepted = props, qs, accepted
	d.account(&ev, k)
	if h != nil && h.OnSpeculative != nil {
		h.OnSpeculative(ev)
	}
	return emitted, nil
}

// logProb is log softmax(row)[t], in float64.
func logProb(row []float32, t int32) float64 {
	return float64(row[t]) - sample.LogSumExp(row)
}

// topN is how many of each position's most likely tokens a hook sees.
const topN = 6

// top lists the n most likely tokens of a distribution, most likely first
// (ties by id), leaving out those it gives no probability.
func top(dist []float32, n int) []sample.Candidate {
	var out []sample.Candidate
	for _, id := range sample.TopN(dist, n) {
		if dist[id] > 0 {
			out = append(out, sample.Candidate{ID: id, P: dist[id]})
		}
	}
	return out
}

// shown is what a hook sees of a position's distribution: its most likely
// tokens after the chain, or, greedy (where the chain leaves the argmax
// alone), under the raw logits at temperature 1.
func (d *Decoder) shown(logits, dist []float32) []sample.Candidate {
	if d.greedy {
		return top(sample.Probabilities(logits, 1), topN)
	}
	return top(dist, topN)
}

// keep decides proposal x with draft probability q.
func (d *Decoder) keep(x int32, q float32, ev *hooks.Speculative) bool {
	if d.greedy {
		return d.p[x] > 0 // the target's chain left only its argmax
	}
	u := d.rng.Float64()
	ev.U = append(ev.U, u)
	return u*float64(q) < float64(d.p[x])
}

// resample draws from the residual max(0, p − q) at the rejected
// position i (greedy: the target's argmax).
func (d *Decoder) resample(i int, ev *hooks.Speculative) int32 {
	if d.greedy {
		return int32(slices.Index(d.p, 1))
	}
	res, q := d.p, d.q[i]
	var sum float64
	for t := range res {
		res[t] = max(0, res[t]-q[t])
		sum += float64(res[t])
	}
	if sum <= 0 { // p ≤ q everywhere cannot reject; guard against rounding
		return d.draw(q)
	}
	for t, r := range res {
		if r > 0 {
			ev.Residual = append(ev.Residual, sample.Candidate{ID: int32(t), P: float32(float64(r) / sum)})
		}
	}
	return d.drawFrom(res, sum)
}

// draw picks a token from a distribution with the decoder's generator
// (the only token of a one-hot one without a draw).
func (d *Decoder) draw(dist []float32) int32 {
	var sum float64
	nonzero, last := 0, 0
	for t, v := range dist {
		if v > 0 {
			sum += float64(v)
			nonzero, last = nonzero+1, t
		}
	}
	if nonzero == 1 {
		return int32(last)
	}
	return d.drawFrom(dist, sum)
}

// drawFrom draws u·sum along the cumulative weights, in id order.
func (d *Decoder) drawFrom(w []float32, sum float64) int32 {
	target := d.rng.Float64() * sum
	var cum float64
	last := 0
	for t, v := range w {
		if v <= 0 {
			continue
		}
		cum += float64(v)
		last = t
		if cum > target {
			return int32(t)
		}
	}
	return int32(last)
}

// drafted and accepted count every decoder's proposals in this process.
var drafted, accepted atomic.Int64

// ProcessTotals are the tokens every decoder in this process has drafted
// and had accepted since it started (a metrics page's counters).
func ProcessTotals() (draftedTokens, acceptedTokens int64) { return drafted.Load(), accepted.Load() }

// account adds a round to the statistics and adapts K.
func (d *Decoder) account(ev *hooks.Speculative, k int) {
	d.stats.Rounds++
	d.stats.Drafted += k
	d.stats.Accepted += ev.Accepted
	drafted.Add(int64(k))
	accepted.Add(int64(ev.Accepted))
	d.stats.Emitted += ev.Accepted + 1
	d.stats.Draft += ev.Draft
	d.stats.Verify += ev.Verify
	if !d.adaptive {
		return
	}
	switch {
	case ev.Accepted == k:
		d.k = min(d.k+1, d.maxK)
	case 2*ev.Accepted < k:
		d.k = max(d.k-1, 1)
	}
}

// K is the number of tokens the next round proposes.
func (d *Decoder) K() int { return d.k }

// Generate starts from prompt and emits up to n tokens (calling emit with
// each), stopping after an end-of-generation token.
func (d *Decoder) Generate(ctx context.Context, prompt []int32, n int, emit func(int32) error) error {
	if err := d.Start(ctx, prompt); err != nil {
		return err
	}
	if n < 1 {
		return nil
	}
	end := stop.NewEnd(d.target.Model.Tokenizer, stop.Limits{MaxTokens: n})
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		toks, err := d.Step(ctx)
		if err != nil {
			return err
		}
		for _, t := range toks {
			if err := emit(t); err != nil {
				return err
			}
			if end.Next(t) != "" {
				return nil
			}
		}
	}
}

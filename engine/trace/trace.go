// Package trace records everything one token step computes — one prefill
// or one decode forward pass and the sampling that follows — from the
// engine's hooks, with bounded memory, as JSON that can be written, read
// back and replayed: a viewer steps through the stored stages (forward and
// back) without re-running the model.
package trace

import (
	"math"
	"slices"
	"time"

	"stepthrough/engine/hooks"
	"stepthrough/engine/sample"
)

// Options bound what a Recorder keeps.
type Options struct {
	// Layers to keep per-layer data for; nil keeps all.
	Layers []int
	// Attention keeps scores and weights; QKV keeps the Q, K, V rows;
	// MLP keeps the feed-forward activations.
	Attention, QKV, MLP bool
	// LastPositions keeps per-position data only for the last this-many new
	// positions of a pass (a long prompt's prefill); 0 keeps all.
	LastPositions int
	// Candidates caps the candidates kept per sampler step and draw, and
	// Removed the removed tokens listed per step (counts are always exact).
	Candidates, Removed int
	// Lens keeps the logit lens: this many likeliest tokens per layer and
	// kept position, and the last position's whole row per layer (0: no
	// lens, and the backend computes none).
	Lens int
	// LensPositions keeps the lens's likeliest tokens for only the last
	// this-many positions of a pass (0: every kept position): each is a
	// vocabulary-wide softmax per layer, and a viewer shows a few.
	LensPositions int
}

// Full keeps everything, with 64 candidates and removed tokens per step.
func Full() Options {
	return Options{Attention: true, QKV: true, MLP: true, Candidates: 64, Removed: 64}
}

// Step is one forward pass and the sampling after it.
type Step struct {
	Index int    `json:"index"`
	Kind  string `json:"kind"` // "prefill" or "decode"
	Pos0  int    `json:"pos0"` // position of the first new token
	N     int    `json:"n"`    // new tokens
	// First is the position of the first row kept in per-position data.
	First    int           `json:"first"`
	Tokenize *Tokenize     `json:"tokenize,omitempty"`
	Tokens   []int32       `json:"tokens"`
	Embed    *Embed        `json:"embed,omitempty"`
	Layers   []*Layer      `json:"layers"`
	Logits   *Logits       `json:"logits,omitempty"`
	Sampler  []SamplerStep `json:"sampler,omitempty"`
	Sample   *Sample       `json:"sample,omitempty"`
	Timing   []Timing      `json:"timing,omitempty"`
	// Generation is set on the last step of a generation.
	Generation *Generation `json:"generation,omitempty"`
	// Speculative is set on a speculative decoding round (Kind
	// "speculative"): the forward pass is the target's verify batch.
	Speculative *Speculative `json:"speculative,omitempty"`
}

// Speculative is one round of speculative decoding (see hooks.Speculative):
// the draft's proposals with their probabilities under both chains, the
// draws that decided them, the token emitted after them, and the rows
// both caches dropped.
type Speculative struct {
	Pos      int       `json:"pos"` // position of the first proposal
	Proposed []int32   `json:"proposed"`
	Q        []float32 `json:"q"`
	P        []float32 `json:"p"`
	U        []float64 `json:"u,omitempty"`
	Accepted int       `json:"accepted"`
	Next     int32     `json:"next"`
	Bonus    bool      `json:"bonus"`
	// Residual is max(0, p − q) normalised at the rejected position, most
	// likely first; QTop and PTop are each position's most likely tokens.
	Residual        []Candidate   `json:"residual,omitempty"`
	ResidualCount   int           `json:"residual_count"`
	QTop            [][]Candidate `json:"q_top"`
	PTop            [][]Candidate `json:"p_top"`
	TopsRaw         bool          `json:"tops_raw"` // QTop and PTop at temperature 1 (greedy)
	RolledBack      int           `json:"rolled_back"`
	DraftRolledBack int           `json:"draft_rolled_back"`
	DraftMS         float64       `json:"draft_ms"`
	VerifyMS        float64       `json:"verify_ms"`
}

// Tokenize is the tokenize stage.
type Tokenize struct {
	Text     string  `json:"text"`
	AddedBOS bool    `json:"added_bos"`
	Tokens   []Token `json:"tokens"`
}

// Token is one token with its exact bytes (base64 in JSON) and its byte
// span in the text.
type Token struct {
	ID    int32  `json:"id"`
	Bytes []byte `json:"bytes"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	Added bool   `json:"added,omitempty"`
}

// Embed holds the input vectors, one per kept position.
type Embed struct {
	TokenRows []Vec `json:"token_rows"`
	PosRows   []Vec `json:"pos_rows,omitempty"`
	Input     []Vec `json:"input"`
}

// Layer is one layer's record.
type Layer struct {
	Index       int        `json:"index"`
	Attention   *Attention `json:"attention,omitempty"`
	MLP         *MLP       `json:"mlp,omitempty"`
	ResidAttn   *Residual  `json:"residual_attention,omitempty"`
	ResidMLP    *Residual  `json:"residual_mlp,omitempty"`
	KVLen       int        `json:"kv_len"`
	KVBytesUsed int        `json:"kv_bytes_used"`
	KVBytesAll  int        `json:"kv_bytes_allocated"`
	KVCapacity  int        `json:"kv_capacity"`
	// NewK and NewV are the rows appended to the cache (with QKV).
	NewK []Vec `json:"new_k,omitempty"`
	NewV []Vec `json:"new_v,omitempty"`
	// Lens is what the model would predict if it ended after this layer
	// (with Options.Lens).
	Lens *Lens `json:"lens,omitempty"`
}

// Lens is one layer's logit lens: the final norm and output matrix
// applied to its residual stream.
type Lens struct {
	Top  [][]Candidate `json:"top"`  // per kept position (Options.LensPositions), the likeliest tokens (p at T = 1)
	Last Vec           `json:"last"` // the last position's logits
}

// Attention: per kept position t and head h, Scores[t][h] and
// Weights[t][h] cover the visible positions 0..First+t (the causal mask
// hides the rest).
type Attention struct {
	Heads   int     `json:"heads"`
	KVHeads int     `json:"kv_heads"`
	HeadDim int     `json:"head_dim"`
	Scale   float32 `json:"scale"`
	Normed  []Vec   `json:"normed,omitempty"`
	Q       []Vec   `json:"q,omitempty"`
	Scores  [][]Vec `json:"scores,omitempty"`
	Weights [][]Vec `json:"weights,omitempty"`
	Context []Vec   `json:"context,omitempty"`
	Out     []Vec   `json:"out,omitempty"`
}

// MLP is the feed-forward block.
type MLP struct {
	Kind   string `json:"kind"`
	Normed []Vec  `json:"normed,omitempty"`
	Gate   []Vec  `json:"gate,omitempty"`
	Up     []Vec  `json:"up,omitempty"`
	Act    []Vec  `json:"act,omitempty"`
	Out    []Vec  `json:"out,omitempty"`
}

// Residual is the residual stream after a block, with each row's L2 norm.
type Residual struct {
	X     []Vec `json:"x"`
	Norms Vec   `json:"norms"`
}

// Logits are the raw logits of the last position (the one predicted from).
type Logits struct {
	Pos    int `json:"pos"`
	Logits Vec `json:"logits"`
}

// Candidate is a token in a sampler step.
type Candidate struct {
	ID    int32   `json:"id"`
	Logit float32 `json:"logit"`
	P     float32 `json:"p"`
}

// SamplerStep is one step of the chain: survivors with their renormalised
// probabilities, and the tokens it removed (highest logit first).
type SamplerStep struct {
	Index        int         `json:"index"`
	Step         sample.Step `json:"step"`
	Skipped      bool        `json:"skipped"`
	BeforeCount  int         `json:"before_count"`
	AfterCount   int         `json:"after_count"`
	After        []Candidate `json:"after"`
	Removed      []Candidate `json:"removed"`
	RemovedCount int         `json:"removed_count"`
}

// Sample is the draw.
type Sample struct {
	Greedy     bool        `json:"greedy"`
	U          float64     `json:"u"`
	Chosen     int32       `json:"chosen"`
	Index      int         `json:"index"`
	Candidates []Candidate `json:"candidates"`
	CDF        []float64   `json:"cdf"`
	Count      int         `json:"count"`
}

// Timing is a stage's wall time in milliseconds.
type Timing struct {
	Stage string  `json:"stage"`
	Layer int     `json:"layer"`
	MS    float64 `json:"ms"`
}

// Generation sums up a generation, in milliseconds.
type Generation struct {
	PromptTokens int     `json:"prompt_tokens"`
	Generated    int     `json:"generated"`
	PrefillMS    float64 `json:"prefill_ms"`
	TTFTMS       float64 `json:"ttft_ms"`
	TPOTMS       float64 `json:"tpot_ms"`
	TotalMS      float64 `json:"total_ms"`
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// Recorder turns hook events into Steps. A step starts at each forward
// pass's embed stage; a tokenize event opens the next step. Not safe for
// concurrent use (one engine session at a time).
type Recorder struct {
	opt     Options
	steps   []*Step
	pending *Tokenize
	// OnStep, if set, receives each step when the next one starts or
	// Finish is called (e.g. to stream JSON lines).
	OnStep func(*Step)
}

// NewRecorder returns a recorder keeping what opt says.
func NewRecorder(opt Options) *Recorder { return &Recorder{opt: opt} }

// Steps are the steps recorded so far.
func (r *Recorder) Steps() []*Step { return r.steps }

// Finish closes the current step.
func (r *Recorder) Finish() {
	if r.OnStep != nil && len(r.steps) > 0 {
		r.OnStep(r.steps[len(r.steps)-1])
	}
}

func (r *Recorder) cur() *Step {
	if len(r.steps) == 0 {
		r.steps = append(r.steps, &Step{Kind: "prefill"})
	}
	return r.steps[len(r.steps)-1]
}

func (r *Recorder) keepLayer(l int) bool {
	return r.opt.Layers == nil || slices.Contains(r.opt.Layers, l)
}

// kept returns the first kept row of a pass of n rows.
func (r *Recorder) kept(n int) int {
	if r.opt.LastPositions > 0 && n > r.opt.LastPositions {
		return n - r.opt.LastPositions
	}
	return 0
}

func (r *Recorder) layer(l int) *Layer {
	s := r.cur()
	for _, L := range s.Layers {
		if L.Index == l {
			return L
		}
	}
	L := &Layer{Index: l}
	s.Layers = append(s.Layers, L)
	return L
}

// Hooks returns the hooks that feed this recorder.
func (r *Recorder) Hooks() *hooks.Hooks {
	h := r.hooks()
	if r.opt.Lens > 0 { // the lens costs a vocabulary-wide product per layer: asked for only
		h.OnLens, h.LensRows = r.lens, r.lensRows()
	}
	return h
}

// lensRows is how many of a pass's last rows the lens keeps (0: all).
func (r *Recorder) lensRows() int {
	a, b := r.opt.LastPositions, r.opt.LensPositions
	if a == 0 || b > 0 && b < a {
		return b
	}
	return a
}

// lens records one layer's logit lens.
func (r *Recorder) lens(e hooks.Lens) {
	if !r.keepLayer(e.Layer) {
		return
	}
	k := 0
	if n := r.lensRows(); n > 0 && e.N > n {
		k = e.N - n
	}
	L := &Lens{Last: vec(e.Logits[(e.N-1)*e.Vocab : e.N*e.Vocab])}
	for t := k; t < e.N; t++ {
		L.Top = append(L.Top, Likeliest(e.Logits[t*e.Vocab:(t+1)*e.Vocab], r.opt.Lens))
	}
	r.layer(e.Layer).Lens = L
}

// Likeliest are the n likeliest tokens of a row of logits with their
// probabilities at T = 1 (as sample.Probabilities computes them), without
// a vocabulary-wide copy of the row.
func Likeliest(row []float32, n int) []Candidate {
	m := float32(math.Inf(-1))
	for _, l := range row {
		m = max(m, l)
	}
	var sum float64
	for _, l := range row {
		sum += math.Exp(float64(l - m))
	}
	var top []Candidate
	for _, id := range sample.TopN(row, n) {
		p := float32(math.Exp(float64(row[id] - m)))
		top = append(top, Candidate{ID: id, Logit: row[id], P: float32(float64(p) / sum)})
	}
	return top
}

func (r *Recorder) hooks() *hooks.Hooks {
	return &hooks.Hooks{
		OnTokenize: func(e hooks.Tokenize) {
			t := &Tokenize{Text: e.Text, AddedBOS: e.AddedBOS}
			for i, tk := range e.Tokens {
				t.Tokens = append(t.Tokens, Token{ID: tk.ID, Bytes: slices.Clone(e.Bytes[i]), Start: tk.Start, End: tk.End, Added: tk.Added})
			}
			r.pending = t
		},
		OnEmbed: func(e hooks.Embed) {
			if len(r.steps) > 0 {
				r.Finish()
			}
			kind := "decode"
			if e.Pos0 == 0 || e.N > 1 {
				kind = "prefill"
			}
			k := r.kept(e.N)
			s := &Step{Index: len(r.steps), Kind: kind, Pos0: e.Pos0, N: e.N, First: e.Pos0 + k, Tokens: slices.Clone(e.Tokens), Tokenize: r.pending}
			r.pending = nil
			n, d := e.N-k, e.Embd
			s.Embed = &Embed{TokenRows: rows(e.TokenRows[k*d:], n, d), Input: rows(e.Input[k*d:], n, d)}
			if e.PosRows != nil {
				s.Embed.PosRows = rows(e.PosRows[k*d:], n, d)
			}
			r.steps = append(r.steps, s)
		},
		OnAttention: func(a hooks.Attention) {
			if !r.keepLayer(a.Layer) {
				return
			}
			k := r.kept(a.N)
			n, qd := a.N-k, a.Heads*a.HeadDim
			e := len(a.Normed) / a.N
			at := &Attention{Heads: a.Heads, KVHeads: a.KVHeads, HeadDim: a.HeadDim, Scale: a.Scale,
				Normed: rows(a.Normed[k*e:], n, e), Context: rows(a.Context[k*qd:], n, qd), Out: rows(a.Out[k*e:], n, e)}
			if r.opt.QKV {
				at.Q = rows(a.Q[k*qd:], n, qd)
			}
			if r.opt.Attention {
				for t := k; t < a.N; t++ {
					visible := a.Pos0 + t + 1
					var sc, w []Vec
					for h := 0; h < a.Heads; h++ {
						row := (t*a.Heads + h) * a.Ctx
						sc = append(sc, vec(a.Scores[row:row+visible]))
						w = append(w, vec(a.Weights[row:row+visible]))
					}
					at.Scores, at.Weights = append(at.Scores, sc), append(at.Weights, w)
				}
			}
			r.layer(a.Layer).Attention = at
		},
		OnMLP: func(p hooks.MLP) {
			if !r.keepLayer(p.Layer) {
				return
			}
			k := r.kept(p.N)
			n := p.N - k
			e, f := len(p.Normed)/p.N, len(p.Act)/p.N
			m := &MLP{Kind: p.Kind, Out: rows(p.Out[k*e:], n, e)}
			if r.opt.MLP {
				m.Normed, m.Act = rows(p.Normed[k*e:], n, e), rows(p.Act[k*f:], n, f)
				if p.Gate != nil {
					m.Gate = rows(p.Gate[k*f:], n, f)
				}
				m.Up = rows(p.Up[k*f:], n, f)
			}
			r.layer(p.Layer).MLP = m
		},
		OnResidual: func(x hooks.Residual) {
			if !r.keepLayer(x.Layer) {
				return
			}
			k := r.kept(x.N)
			e := len(x.X) / x.N
			res := &Residual{X: rows(x.X[k*e:], x.N-k, e), Norms: vec(x.Norms[k:x.N])}
			if x.After == "attention" {
				r.layer(x.Layer).ResidAttn = res
			} else {
				r.layer(x.Layer).ResidMLP = res
			}
		},
		OnKVAppend: func(kv hooks.KVAppend) {
			L := r.layer(kv.Layer)
			L.KVLen, L.KVBytesUsed, L.KVBytesAll, L.KVCapacity = kv.Len, kv.BytesUsed, kv.BytesAllocated, kv.Capacity
			if r.opt.QKV && r.keepLayer(kv.Layer) {
				k := r.kept(kv.N)
				d := len(kv.K) / kv.N
				L.NewK, L.NewV = rows(kv.K[k*d:], kv.N-k, d), rows(kv.V[k*d:], kv.N-k, d)
			}
		},
		OnLogits: func(l hooks.Logits) {
			last := l.Rows - 1
			r.cur().Logits = &Logits{Pos: l.First + last, Logits: vec(l.Logits[last*l.Vocab : (last+1)*l.Vocab])}
		},
		OnSamplerStep: func(st sample.StepResult) {
			s := r.cur()
			rec := SamplerStep{Index: st.Index, Step: st.Step, Skipped: st.Skipped, BeforeCount: len(st.Before), AfterCount: len(st.After)}
			rec.After = topCandidates(st.After, r.opt.Candidates)
			alive := idSet(st.After)
			removed := newBest(r.opt.Removed, byLogit)
			for _, c := range st.Before {
				if !alive.has(c.ID) {
					removed.add(c)
					rec.RemovedCount++
				}
			}
			rec.Removed = removed.sorted()
			s.Sampler = append(s.Sampler, rec)
		},
		OnSample: func(d sample.DrawResult) {
			n := len(d.Candidates)
			if r.opt.Candidates > 0 {
				n = min(n, max(r.opt.Candidates, d.Index+1))
			}
			r.cur().Sample = &Sample{Greedy: d.Greedy, U: d.U, Chosen: d.Chosen, Index: d.Index,
				Candidates: topCandidates(d.Candidates, n), CDF: slices.Clone(d.CDF[:n]), Count: len(d.Candidates)}
		},
		OnTiming: func(t hooks.Timing) {
			s := r.cur()
			s.Timing = append(s.Timing, Timing{Stage: t.Stage, Layer: t.Layer, MS: ms(t.Dur)})
		},
		OnSpeculative: func(e hooks.Speculative) {
			s := r.cur()
			s.Kind = "speculative"
			s.Speculative = &Speculative{Pos: e.Pos, Proposed: slices.Clone(e.Proposed), Q: slices.Clone(e.Q), P: slices.Clone(e.P),
				U: slices.Clone(e.U), Accepted: e.Accepted, Next: e.Next, Bonus: e.Bonus,
				Residual: byProbability(e.Residual, r.opt.Candidates), ResidualCount: len(e.Residual),
				RolledBack: e.RolledBack, DraftRolledBack: e.DraftRolledBack, DraftMS: ms(e.Draft), VerifyMS: ms(e.Verify), TopsRaw: e.TopsRaw}
			for _, c := range e.QTop {
				s.Speculative.QTop = append(s.Speculative.QTop, byProbability(c, 0))
			}
			for _, c := range e.PTop {
				s.Speculative.PTop = append(s.Speculative.PTop, byProbability(c, 0))
			}
		},
		OnGeneration: func(g hooks.Generation) {
			r.cur().Generation = &Generation{PromptTokens: g.PromptTokens, Generated: g.Generated,
				PrefillMS: ms(g.Prefill), TTFTMS: ms(g.TTFT), TPOTMS: ms(g.TPOT), TotalMS: ms(g.Total)}
		},
	}
}

// byProbability copies the n most likely candidates (all when n <= 0),
// most likely first, ties by id.
func byProbability(c []sample.Candidate, n int) []Candidate {
	b := newBest(n, func(c sample.Candidate) float32 { return c.P })
	for _, x := range c {
		b.add(x)
	}
	return b.sorted()
}

// topCandidates copies the n highest-logit candidates (all when n <= 0),
// highest first, ties by id.
func topCandidates(c []sample.Candidate, n int) []Candidate {
	b := newBest(n, byLogit)
	for _, x := range c {
		b.add(x)
	}
	return b.sorted()
}

func byLogit(c sample.Candidate) float32 { return c.Logit }

// best keeps the n candidates of highest key it is given (all when n <=
// 0), ties by the lower id, in a heap whose root is the lowest kept: the
// few of a whole vocabulary cost one pass and n candidates of memory, not
// a sorted copy of the vocabulary.
type best struct {
	n   int
	key func(sample.Candidate) float32
	h   []sample.Candidate
}

func newBest(n int, key func(sample.Candidate) float32) *best { return &best{n: n, key: key} }

// cmp orders a before b when a ranks higher: the greater key, then the
// lower id.
func (b *best) cmp(x, y sample.Candidate) int {
	switch kx, ky := b.key(x), b.key(y); {
	case kx > ky:
		return -1
	case kx < ky:
		return 1
	}
	return int(x.ID - y.ID)
}

func (b *best) add(c sample.Candidate) {
	switch {
	case b.n <= 0:
		b.h = append(b.h, c)
	case len(b.h) < b.n:
		b.h = append(b.h, c)
		b.up(len(b.h) - 1)
	case b.cmp(c, b.h[0]) < 0: // above the lowest kept: it takes its place
		b.h[0] = c
		b.down(0)
	}
}

// up and down restore the heap (the lowest-ranked candidate at the root)
// after a change at i.
func (b *best) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if b.cmp(b.h[i], b.h[p]) <= 0 {
			return
		}
		b.h[i], b.h[p] = b.h[p], b.h[i]
		i = p
	}
}

func (b *best) down(i int) {
	for {
		low := i
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < len(b.h) && b.cmp(b.h[c], b.h[low]) > 0 {
				low = c
			}
		}
		if low == i {
			return
		}
		b.h[i], b.h[low] = b.h[low], b.h[i]
		i = low
	}
}

// sorted is what was kept, highest first.
func (b *best) sorted() []Candidate {
	slices.SortFunc(b.h, b.cmp)
	out := make([]Candidate, len(b.h))
	for i, x := range b.h {
		out[i] = Candidate{ID: x.ID, Logit: x.Logit, P: x.P}
	}
	return out
}

// ids is a set of token ids, one bit each.
type ids []uint64

func idSet(c []sample.Candidate) ids {
	top := int32(-1)
	for _, x := range c {
		top = max(top, x.ID)
	}
	s := make(ids, top/64+1)
	for _, x := range c {
		if x.ID >= 0 {
			s[x.ID/64] |= 1 << (x.ID % 64)
		}
	}
	return s
}

func (s ids) has(id int32) bool {
	return id >= 0 && int(id/64) < len(s) && s[id/64]&(1<<(id%64)) != 0
}

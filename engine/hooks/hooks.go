// Package hooks lets a caller watch every stage of inference. A Hooks
// value is a struct of optional callbacks carried in a context.Context (the
// net/http/httptrace pattern): nil fields mean "not interested", and
// WithHooks composes several sets. The engine checks each field before it
// does any extra work, so unset hooks cost a nil check.
//
// Every slice in an event is a read-only view of the engine's own buffers,
// valid only during the callback: copy what you keep. Hooks never change
// what the engine computes (the logits are bit-identical with and without
// hooks; tests check this).
//
// Shapes are row-major. For a forward pass over N new tokens starting at
// position Pos0, "n×d" means N rows of d values, row t being position
// Pos0+t.
package hooks

import (
	"context"
	"time"

	"stepthrough/engine/sample"
	"stepthrough/engine/tokenizer"
)

// Hooks are the callbacks, one per stage. Any may be nil.
type Hooks struct {
	// OnTokenize: the input text and its tokens.
	OnTokenize func(Tokenize)
	// OnEmbed: the input vectors of the new tokens.
	OnEmbed func(Embed)
	// OnAttention: one layer's attention block.
	OnAttention func(Attention)
	// OnMLP: one layer's feed-forward block.
	OnMLP func(MLP)
	// OnResidual: the residual stream after a layer's attention or MLP.
	OnResidual func(Residual)
	// OnLens: the logit lens, the final norm and the output matrix applied
	// to the residual stream after a layer, as if the model ended there.
	// It costs a vocabulary-wide product per layer and row: set it only
	// to show it.
	OnLens func(Lens)
	// LensRows asks OnLens for only the last this-many rows of each pass
	// (0: every row), which is all a trace that keeps the last positions
	// needs: a long prompt's lens over a large vocabulary then costs
	// those rows' products and buffer, not the prompt's. A backend may
	// give more rows than asked.
	LensRows int
	// OnKVAppend: the key and value rows one layer wrote to the cache.
	OnKVAppend func(KVAppend)
	// OnLogits: the raw logits (before any sampling step).
	OnLogits func(Logits)
	// OnSamplerStep: one step of the sampler chain.
	OnSamplerStep func(sample.StepResult)
	// OnSample: the draw (or argmax) that chose the token.
	OnSample func(sample.DrawResult)
	// OnTiming: the wall time of one stage of a forward pass.
	OnTiming func(Timing)
	// OnGeneration: prefill time, TTFT and TPOT of a finished generation.
	OnGeneration func(Generation)
	// OnSpeculative: one round of speculative decoding (propose, verify,
	// accept or reject, roll back).
	OnSpeculative func(Speculative)
}

// Tokenize is the tokenize stage.
type Tokenize struct {
	Text     string
	Tokens   []tokenizer.Token // ids and byte spans in Text
	Bytes    [][]byte          // each token's exact bytes
	AddedBOS bool
}

// Embed is the embedding stage: Input = TokenRows (+ PosRows), n×Embd.
type Embed struct {
	Pos0, N, Embd int
	Tokens        []int32
	TokenRows     []float32 // rows of the token embedding matrix
	PosRows       []float32 // learned position embeddings (gpt2); nil for RoPE models
	Input         []float32 // what enters layer 0
}

// Attention is one layer's attention block over the new tokens. Scores and
// Weights cover all Pos0+N cache positions (Ctx) for every new token and
// query head: n×Heads×Ctx. Masked (future) positions have score -Inf and
// weight 0; each visible row of Weights sums to 1.
type Attention struct {
	Layer, Pos0, N          int
	Heads, KVHeads, HeadDim int
	Ctx                     int       // positions attended over: Pos0+N
	Scale                   float32   // 1/sqrt(HeadDim)
	Normed                  []float32 // the normed input, n×Embd
	Q                       []float32 // n×Heads×HeadDim, after RoPE where the model uses it
	K, V                    []float32 // the new rows, n×KVHeads×HeadDim (K after RoPE)
	Scores                  []float32 // q·k × Scale, before softmax
	Weights                 []float32 // after softmax
	Context                 []float32 // the weighted sum of V, n×Heads×HeadDim
	Out                     []float32 // after the output projection (and bias), n×Embd
}

// MLP is one layer's feed-forward block.
type MLP struct {
	Layer, Pos0, N int
	Kind           string    // "swiglu" or "gelu"
	Normed         []float32 // n×Embd
	Gate           []float32 // n×FFN before SiLU (swiglu only)
	Up             []float32 // n×FFN (before GELU for gelu)
	Act            []float32 // silu(gate)·up, or gelu(up): n×FFN
	Out            []float32 // after the down projection (and bias), n×Embd
}

// Residual is the residual stream after a block was added.
type Residual struct {
	Layer, Pos0, N int
	After          string    // "attention" or "mlp"
	X              []float32 // n×Embd
	Norms          []float32 // the L2 norm of each row
}

// Lens is what the model would predict if it ended after a layer: the
// final norm and output projection (and soft cap) of that layer's
// residual stream, n×Vocab logits (the last layer's are the logits).
type Lens struct {
	Layer, Pos0, N int
	Vocab          int
	Logits         []float32
}

// KVAppend is one layer's cache write.
type KVAppend struct {
	Layer, Pos0, N int
	K, V           []float32 // the rows written, n×KVDim
	Len            int       // positions in the cache after the write
	Capacity       int
	BytesUsed      int // all layers, after the write
	BytesAllocated int
}

// Logits are raw logits for Rows positions starting at First (the last
// position only, unless all positions were asked for): Rows×Vocab.
type Logits struct {
	First, Rows, Vocab int
	Logits             []float32
}

// Timing is one stage's wall time. Layer is -1 for stages outside layers.
type Timing struct {
	Stage string // "embed", "attention", "mlp", "output"
	Layer int
	Pos0  int
	N     int
	Dur   time.Duration
}

// Generation sums up one generation: Prefill is the prompt's forward pass;
// TTFT the time from the start to the first sampled token; TPOT the mean
// time per output token after the first.
type Generation struct {
	PromptTokens, Generated int
	Prefill, TTFT, TPOT     time.Duration
	Total                   time.Duration
}

type ctxKey struct{}

// WithHooks returns a context carrying h, composed with any hooks ctx
// already carries (h's callbacks run first).
func WithHooks(ctx context.Context, h *Hooks) context.Context {
	if old := From(ctx); old != nil {
		h = compose(h, old)
	}
	return context.WithValue(ctx, ctxKey{}, h)
}

// Without returns a context carrying no hooks (a draft model's passes
// that a trace of the target must not record).
func Without(ctx context.Context) context.Context {
	return context.WithValue(ctx, ctxKey{}, (*Hooks)(nil))
}

// From returns the hooks in ctx, or nil.
func From(ctx context.Context) *Hooks {
	if ctx == nil {
		return nil
	}
	h, _ := ctx.Value(ctxKey{}).(*Hooks)
	return h
}

func join[T any](a, b func(T)) func(T) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(v T) { a(v); b(v) }
}

// lensRows is what two sets of hooks ask of the lens together: the rows
// of the one that wants more (0, every row, is the most).
func lensRows(a, b *Hooks) int {
	switch {
	case a.OnLens == nil:
		return b.LensRows
	case b.OnLens == nil:
		return a.LensRows
	case a.LensRows == 0 || b.LensRows == 0:
		return 0
	}
	return max(a.LensRows, b.LensRows)
}

func compose(a, b *Hooks) *Hooks {
	return &Hooks{
		OnTokenize:    join(a.OnTokenize, b.OnTokenize),
		OnEmbed:       join(a.OnEmbed, b.OnEmbed),
		OnAttention:   join(a.OnAttention, b.OnAttention),
		OnMLP:         join(a.OnMLP, b.OnMLP),
		OnResidual:    join(a.OnResidual, b.OnResidual),
		OnLens:        join(a.OnLens, b.OnLens),
		LensRows:      lensRows(a, b),
		OnKVAppend:    join(a.OnKVAppend, b.OnKVAppend),
		OnLogits:      join(a.OnLogits, b.OnLogits),
		OnSamplerStep: join(a.OnSamplerStep, b.OnSamplerStep),
		OnSample:      join(a.OnSample, b.OnSample),
		OnTiming:      join(a.OnTiming, b.OnTiming),
		OnGeneration:  join(a.OnGeneration, b.OnGeneration),
		OnSpeculative: join(a.OnSpeculative, b.OnSpeculative),
	}
}

// Speculative is one round of speculative decoding: the draft model
// proposed K tokens (with their probabilities Q under the draft's sampler
// chain), the target scored all K+1 positions in one batched pass (P:
// each proposed token's probability under the target's chain), each
// proposal was accepted while u < P/Q (U; greedy: while it is the
// target's argmax), the first rejected one replaced by a draw from the
// residual max(0, p − q) (or, all accepted, a bonus token from the
// target), and both caches rolled back past the rejected tokens.
type Speculative struct {
	Pos      int       // position of the first proposed token
	Proposed []int32   // the draft's tokens
	Q, P     []float32 // their probabilities under the draft's and the target's chains
	U        []float64 // the uniform draws deciding each (none when greedy)
	Accepted int       // proposals kept
	Next     int32     // the token emitted after them: resampled or bonus
	Bonus    bool      // every proposal was kept: Next is the target's own draw
	Residual []sample.Candidate
	// QTop and PTop are the most likely tokens at each checked position
	// under the draft's and the target's chains (PTop has one more row
	// when a bonus token was drawn); when TopsRaw (greedy, where the
	// chains keep only the argmax), under the raw logits at temperature 1.
	QTop, PTop [][]sample.Candidate
	TopsRaw    bool
	// LogProbs are the emitted tokens' log-probabilities under the
	// target's raw logits (temperature 1, no sampler chain).
	LogProbs        []float64
	RolledBack      int // target positions dropped
	DraftRolledBack int // draft positions dropped
	Draft           time.Duration
	Verify          time.Duration
}

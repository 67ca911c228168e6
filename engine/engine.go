// Package engine runs language models one step at a time and exposes what
// each step computes.
//
// A forward pass goes: tokenize (engine/tokenizer) → embed → for each layer:
// norm, Q/K/V projections, RoPE, KV-cache append, causal attention, output
// projection, residual add, norm, feed-forward, residual add → final norm →
// logits → the sampler chain (engine/sample) → the chosen token. Models are
// loaded by engine/model from GGUF files (engine/gguf); backends
// (engine/cpu) compute whole forward passes over a KV cache (engine/kv). A
// Session ties a model, a backend and the tokens so far.
//
// Every stage can be watched through hooks carried in a context (package
// engine/hooks): the CPU backend calls them from inside the forward pass,
// the Session for tokenize, the sampler steps, the draw and the timing of a
// generation. The trace package records them into replayable step traces.
//
// Interventions (package engine/intervene: heads switched off, mean
// ablations, steering, patching) are not carried in a context: they are a
// setting of the session (Session.SetEdits), applied by both backends to
// every later pass until changed; ResolveEdits reads the vectors a set's
// mean ablation, steering and patch take from the intact model.
//
// engine never imports the web packages (server, views); the dependency
// test in this directory enforces it.
package engine

import (
	"context"

	"stepthrough/engine/hooks"
	"stepthrough/engine/intervene"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
	"stepthrough/engine/tokenizer"
)

// Backend computes forward passes of one sequence over its own KV cache,
// on a model loaded once and shared (Loaded).
type Backend interface {
	// Forward runs tokens at the next positions and returns the last
	// token's logits (reused buffer), or all rows when all is set. Hooks in
	// ctx observe the stages.
	Forward(ctx context.Context, tokens []int32, all bool) ([]float32, error)
	// SetEdits makes set (checked against the model; nil or empty: none)
	// the interventions of every later pass until the next SetEdits.
	SetEdits(set *intervene.Set) error
	Pos() int
	Capacity() int  // positions the KV cache holds
	Reset()         // forget every position
	Truncate(n int) // forget positions from n on (roll back)
	// Fork makes a backend on the same loaded model that continues from
	// here with its own copy of the KV cache, and the same edits.
	Fork() (Backend, error)
	// CopyFrom makes this backend continue from where src (of the same
	// loaded model) is.
	CopyFrom(src Backend) error
	Close()
}

// Options configure Load (and NewSession's private model).
type Options struct {
	Threads int    // CPU threads; 0: one per core; at most GOMAXPROCS (see cpu.Options)
	Context int    // KV-cache positions; 0 means the model's, at most 2048
	Backend string // "auto" (default), "cpu" or "vulkan"; see Load
	// MaxBatch is the most tokens one pass takes (a prompt is cut into
	// passes of this size; a batch of sessions must fit in one); 0: 512.
	MaxBatch int
}

// Session is one conversation with a model: its backend state and the
// tokens processed so far.
type Session struct {
	Model   *model.Model
	backend Backend
	info    BackendInfo
	tokens  []int32
	edits   *intervene.Set // SetEdits's, applied to every pass; nil: none
	one     [1]int32       // the decode step's input, reused so no slice escapes per token
}

// NewSession loads m for one session alone (the CPU unless
// Options.Backend says otherwise: tests and tools get the oracle by
// default; the app and the CLI pass "auto"). A server with many sessions
// on one model uses Load once and Loaded.NewSession for each.
func NewSession(m *model.Model, opt Options) (*Session, error) {
	if opt.Backend == "" {
		opt.Backend = "cpu"
	}
	b, info, err := NewBackend(m, opt)
	if err != nil {
		return nil, err
	}
	return &Session{Model: m, backend: b, info: info}, nil
}

// Fork makes a session that continues from where s is: the same tokens
// and a copy of the KV cache on the same loaded model (no weights are
// copied). Later passes of either do not affect the other.
func (s *Session) Fork() (*Session, error) {
	b, err := s.backend.Fork()
	if err != nil {
		return nil, err
	}
	return &Session{Model: s.Model, backend: b, info: s.info, tokens: append([]int32(nil), s.tokens...), edits: s.edits}, nil
}

// SetEdits makes set the interventions of every later pass of s (Eval,
// generation) until the next SetEdits; nil or an empty set: none. It
// refuses a set the model cannot take (intervene.Set.Check), keeping the
// edits s had. The tokens already read keep the edits they were read
// with. s holds set itself, not a copy: leave it unchanged while s uses
// it.
func (s *Session) SetEdits(set *intervene.Set) error {
	if err := s.backend.SetEdits(set); err != nil {
		return err
	}
	s.edits = nil
	if set != nil && len(set.Edits) > 0 {
		s.edits = set
	}
	return nil
}

// Edits are the interventions s's passes apply (nil: none).
func (s *Session) Edits() *intervene.Set { return s.edits }

// CopyFrom makes s continue from where src is (both on the same loaded
// model): its tokens and KV cache (s keeps its own edits).
func (s *Session) CopyFrom(src *Session) error {
	if err := s.backend.CopyFrom(src.backend); err != nil {
		return err
	}
	s.tokens = append(s.tokens[:0], src.tokens...)
	return nil
}

// Truncate forgets the tokens from n on and their KV-cache rows, so the
// next Eval continues from position n (speculative rollback, branches).
func (s *Session) Truncate(n int) {
	n = max(0, min(n, len(s.tokens)))
	s.backend.Truncate(n)
	s.tokens = s.tokens[:n]
}

// Pos is the number of tokens processed.
func (s *Session) Pos() int { return len(s.tokens) }

// Backend says what computes this session's passes.
func (s *Session) Backend() BackendInfo { return s.info }

// Close releases the backend.
func (s *Session) Close() { s.backend.Close() }

// Capacity is the number of positions the session's KV cache holds.
func (s *Session) Capacity() int { return s.backend.Capacity() }

// Tokens are the ids processed so far.
func (s *Session) Tokens() []int32 { return s.tokens }

// Reset forgets all tokens.
func (s *Session) Reset() { s.backend.Reset(); s.tokens = s.tokens[:0] }

// Tokenize encodes text (with BOS/EOS as the model asks when addSpecial)
// and reports it to the OnTokenize hook. Special-token text is not parsed.
func (s *Session) Tokenize(ctx context.Context, text string, addSpecial bool) []int32 {
	return s.report(ctx, text, s.Model.Tokenizer.Encode(text, addSpecial))
}

// TokenizeSpecial is Tokenize with special-token text parsed (a chat
// template's markup becomes its control tokens), as llama-server parses a
// raw prompt.
func (s *Session) TokenizeSpecial(ctx context.Context, text string, addSpecial bool) []int32 {
	return s.report(ctx, text, s.Model.Tokenizer.EncodeSpecialTokens(text, addSpecial))
}

func (s *Session) report(ctx context.Context, text string, toks []tokenizer.Token) []int32 {
	tk := s.Model.Tokenizer
	ids := make([]int32, len(toks))
	for i, t := range toks {
		ids[i] = t.ID
	}
	if h := hooks.From(ctx); h != nil && h.OnTokenize != nil {
		ev := hooks.Tokenize{Text: text, Tokens: toks, Bytes: make([][]byte, len(toks))}
		for i, t := range toks {
			ev.Bytes[i] = tk.Bytes(t.ID)
			ev.AddedBOS = ev.AddedBOS || (t.Added && t.ID == tk.Vocab().BOS)
		}
		h.OnTokenize(ev)
	}
	return ids
}

// Eval runs ids through the model after the tokens so far and returns the
// logits of the last one (valid until the next call). A pass whose logits
// are not all finite keeps nothing and returns a *NonFiniteError naming
// where the first NaN or infinity appeared.
func (s *Session) Eval(ctx context.Context, ids []int32) ([]float32, error) {
	return s.eval(ctx, ids, false)
}

// EvalAll is Eval returning the logits of every id, len(ids)×vocab.
func (s *Session) EvalAll(ctx context.Context, ids []int32) ([]float32, error) {
	return s.eval(ctx, ids, true)
}

func (s *Session) eval(ctx context.Context, ids []int32, all bool) ([]float32, error) {
	logits, err := s.backend.Forward(ctx, ids, all)
	if err == nil && !finite(logits) {
		s.backend.Truncate(len(s.tokens))
		return nil, s.whereNonFinite(ctx, ids)
	}
	if err != nil {
		s.backend.Truncate(len(s.tokens)) // a pass stopped part way keeps nothing
		return nil, err
	}
	s.tokens = append(s.tokens, ids...)
	return logits, nil
}

// Argmax returns the index of the largest logit; the first one wins ties
// (0 when every one is NaN).
func Argmax(x []float32) int32 { return int32(max(0, sample.Argmax(x))) }

// Sample runs the sampler chain over logits, reporting each step and the
// draw to the hooks in ctx.
func Sample(ctx context.Context, s *sample.Sampler, logits []float32) int32 {
	h := hooks.From(ctx)
	if h == nil || (h.OnSamplerStep == nil && h.OnSample == nil) {
		return s.Sample(logits, nil)
	}
	return s.Sample(logits, &sample.Observer{Step: h.OnSamplerStep, Draw: h.OnSample})
}

// Greedy is Generate with temperature 0: always the most likely token.
func (s *Session) Greedy(ctx context.Context, prompt []int32, n int, emit func(id int32) error) error {
	p := sample.Defaults()
	p.Temperature, p.SeedSet = 0, true
	smp, err := sample.New(p)
	if err != nil {
		return err
	}
	return s.Generate(ctx, prompt, n, smp, emit)
}

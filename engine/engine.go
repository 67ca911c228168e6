// Package engine runs language models one step at a time and exposes what
// each step computes.
//
// A forward pass goes: tokenize (engine/tokenizer) → embed → for each layer:
// norm, Q/K/V projections, RoPE, KV-cache append, causal attention, output
// projection, residual add, norm, feed-forward, residual add → final norm →
// logits. Models are loaded by engine/model from GGUF files (engine/gguf);
// backends (engine/cpu) compute whole forward passes over a KV cache
// (engine/kv). A Session ties a model, a backend and the tokens so far.
//
// engine never imports the web packages (server, views); the dependency
// test in this directory enforces it.
package engine

import (
	"context"
	"fmt"

	"stepthrough/engine/cpu"
	"stepthrough/engine/model"
)

// Backend computes forward passes for one model over its own KV cache.
type Backend interface {
	// Forward runs tokens at the next positions and returns the last
	// token's logits (reused buffer), or all rows when all is set.
	Forward(tokens []int32, all bool) ([]float32, error)
	Pos() int
	Capacity() int // positions the KV cache holds
	Reset()
	Close()
}

// Options configure a Session.
type Options struct {
	Threads int // CPU threads; 0 means all cores
	Context int // KV-cache positions; 0 means the model's, at most 2048
}

// Session is one conversation with a model: its backend state and the
// tokens processed so far.
type Session struct {
	Model   *model.Model
	backend Backend
	tokens  []int32
}

// NewSession prepares a session on the CPU backend.
func NewSession(m *model.Model, opt Options) (*Session, error) {
	r, err := cpu.NewRunner(m, cpu.Options{Threads: opt.Threads, Context: opt.Context})
	if err != nil {
		return nil, err
	}
	return &Session{Model: m, backend: r}, nil
}

// Close releases the backend.
func (s *Session) Close() { s.backend.Close() }

// Capacity is the number of positions the session's KV cache holds.
func (s *Session) Capacity() int { return s.backend.Capacity() }

// Tokens are the ids processed so far.
func (s *Session) Tokens() []int32 { return s.tokens }

// Reset forgets all tokens.
func (s *Session) Reset() { s.backend.Reset(); s.tokens = s.tokens[:0] }

// Eval runs ids through the model after the tokens so far and returns the
// logits of the last one (valid until the next call).
func (s *Session) Eval(ids []int32) ([]float32, error) {
	logits, err := s.backend.Forward(ids, false)
	if err != nil {
		return nil, err
	}
	s.tokens = append(s.tokens, ids...)
	return logits, nil
}

// EvalAll is Eval returning the logits of every id, len(ids)×vocab.
func (s *Session) EvalAll(ids []int32) ([]float32, error) {
	logits, err := s.backend.Forward(ids, true)
	if err != nil {
		return nil, err
	}
	s.tokens = append(s.tokens, ids...)
	return logits, nil
}

// Argmax returns the index of the largest value; the first one wins ties.
func Argmax(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}

// Greedy generates up to n tokens after prompt, always taking the most
// likely one, and calls emit with each. It stops early at an end-of-
// generation token (which is emitted), when the context is full, or when
// ctx is done.
func (s *Session) Greedy(ctx context.Context, prompt []int32, n int, emit func(id int32) error) error {
	if len(prompt) == 0 {
		return fmt.Errorf("generate: empty prompt")
	}
	logits, err := s.Eval(prompt)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		id := Argmax(logits)
		if err := emit(id); err != nil {
			return err
		}
		if s.Model.Tokenizer.IsEOG(id) || i == n-1 {
			return nil
		}
		if logits, err = s.Eval([]int32{id}); err != nil {
			return err
		}
	}
	return nil
}

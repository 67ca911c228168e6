package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"stepthrough/engine/hooks"
	"stepthrough/engine/sample"
	"stepthrough/engine/stop"
)

// ErrStop ends a generation cleanly from Gen.Emit: the token it was given
// is the last.
var ErrStop = errors.New("generation stopped by its caller")

// Why a generation ended (stop's reasons, and the caller's).
const (
	FinishEOS    = stop.EOS
	FinishLength = stop.Length
	FinishStop   = stop.Stop
	FinishCaller = "caller" // Emit returned ErrStop
)

// Limits are a generation's stop conditions (stop.Limits).
type Limits = stop.Limits

// Gen is one generation loop's settings; the loop itself is
// Session.Continue, the one every generator in the code base runs.
type Gen struct {
	Limits // max tokens, stop strings, ignoring end of generation
	// Sampler draws each token (through the context's sampler hooks) and
	// accepts it, for its penalties; nil with Choose.
	Sampler *sample.Sampler
	// Choose picks each token instead of the sampler's draw (argmax, a
	// forced branch); the Sampler, if any, still accepts what it picks.
	Choose func(logits []float32) int32
	// Emit sees each token with the logits it was drawn from; ErrStop
	// ends the loop after it, any other error fails the loop. (A caller
	// that streams text runs its own stop.End or stop.Matcher over the
	// tokens: the loop's rule only decides where it ends.)
	Emit func(id int32, logits []float32) error
}

// Continue generates from logits, the model's scores after everything
// the session has read: it picks a token, emits it and, unless the
// generation ends there (stop.End's rule, ErrStop, ctx), feeds it back
// for the next logits. It returns why it ended.
func (s *Session) Continue(ctx context.Context, logits []float32, g Gen) (string, error) {
	if g.Sampler == nil && g.Choose == nil {
		return "", fmt.Errorf("generate: neither a sampler nor a choice")
	}
	if g.MaxTokens < 1 {
		return "", fmt.Errorf("generate: max tokens %d, want at least 1", g.MaxTokens)
	}
	end := stop.NewEnd(s.Model.Tokenizer, g.Limits)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		var id int32
		if g.Choose != nil {
			id = g.Choose(logits)
		} else {
			id = Sample(ctx, g.Sampler, logits)
		}
		if g.Sampler != nil {
			g.Sampler.Accept(id)
		}
		finish := end.Next(id)
		if g.Emit != nil {
			if err := g.Emit(id, logits); errors.Is(err, ErrStop) {
				return FinishCaller, nil
			} else if err != nil {
				return "", err
			}
		}
		if finish != "" {
			return finish, nil
		}
		s.one[0] = id
		var err error
		if logits, err = s.Eval(ctx, s.one[:]); err != nil {
			return "", err
		}
	}
}

// Fits refuses a generation of n new tokens after prompt tokens that
// would not fit what is left of the session's context: Generate's own
// check, for a caller to make before costly work of its own.
func (s *Session) Fits(prompt, n int) error {
	if len(s.tokens)+prompt+max(n-1, 0) > s.Capacity() {
		return fmt.Errorf("generate: %d prompt tokens and %d new ones exceed the context of %d positions", prompt, n, s.Capacity()-len(s.tokens))
	}
	return nil
}

// Generate processes prompt, then samples up to n tokens with smp (which
// it feeds the prompt and each chosen token), calling emit with each. It
// stops early at an end-of-generation token (which is emitted), when emit
// returns ErrStop, or when ctx is done. The OnGeneration hook receives
// prefill time, TTFT and TPOT.
func (s *Session) Generate(ctx context.Context, prompt []int32, n int, smp *sample.Sampler, emit func(id int32) error) error {
	if len(prompt) == 0 {
		return fmt.Errorf("generate: empty prompt")
	}
	if err := s.Fits(len(prompt), n); err != nil {
		return err
	}
	start := time.Now()
	logits, err := s.Eval(ctx, prompt)
	if err != nil {
		return err
	}
	g := hooks.Generation{PromptTokens: len(prompt), Prefill: time.Since(start)}
	smp.Accept(prompt...)
	var firstAt time.Time
	if n > 0 {
		_, err = s.Continue(ctx, logits, Gen{Limits: Limits{MaxTokens: n}, Sampler: smp, Emit: func(id int32, _ []float32) error {
			if g.Generated++; g.Generated == 1 {
				firstAt = time.Now()
				g.TTFT = firstAt.Sub(start)
			}
			return emit(id)
		}})
	}
	if err != nil {
		return err
	}
	end := time.Now()
	g.Total = end.Sub(start)
	if g.Generated > 1 {
		g.TPOT = end.Sub(firstAt) / time.Duration(g.Generated-1)
	}
	if h := hooks.From(ctx); h != nil && h.OnGeneration != nil {
		h.OnGeneration(g)
	}
	return nil
}

// Package agent runs the tool loop of the lesson model's chat format: the
// model writes until it ends its turn or closes a calculator call; the
// runtime computes the call, appends the result, and the model goes on
// from there. Each stretch of generation is one inference pass over the
// growing context, and Loop reports every pass.
package agent

import (
	"context"
	"fmt"

	"stepthrough/engine"
	"stepthrough/engine/chat"
	"stepthrough/engine/sample"
)

// Pass is one inference pass of the loop.
type Pass struct {
	// Input are the tokens this pass fed the model before generating: the
	// prompt on the first pass, then the tool's result.
	Input []int32
	// Output are the tokens it generated.
	Output []int32
	// Call is the calculator expression the pass ended with ("" when it
	// ended the turn), Result what the runtime computed (or the error it
	// wrote back).
	Call, Result string
}

// Options bound a loop.
type Options struct {
	MaxTokens int // per pass
	MaxCalls  int // tool calls before the runtime stops the loop
	// Sampler makes each pass's sampler (nil: greedy).
	Sampler func() (*sample.Sampler, error)
}

// Loop runs prompt (already tokenized, e.g. a rendered chat) on s and
// returns the passes. It stops when a pass ends without a call, at
// MaxCalls, or when a pass hits MaxTokens.
func Loop(ctx context.Context, s *engine.Session, prompt []int32, o Options) ([]Pass, error) {
	tk := s.Model.Tokenizer
	closeIDs := tk.EncodeIDs(chat.CalcClose, false)
	if len(closeIDs) != 1 {
		return nil, fmt.Errorf("agent: the model has no %s token: it was not trained to call the calculator", chat.CalcClose)
	}
	closeID := closeIDs[0]
	newSampler := o.Sampler
	if newSampler == nil {
		newSampler = func() (*sample.Sampler, error) {
			p := sample.Defaults()
			p.Temperature, p.SeedSet = 0, true
			return sample.New(p)
		}
	}
	var passes []Pass
	var text []int32 // the conversation so far, for finding the call
	input, overlap := prompt, 0
	for {
		smp, err := newSampler()
		if err != nil {
			return passes, err
		}
		smp.Accept(text[:len(text)-overlap]...) // the sampler sees each token once
		p := Pass{Input: input}
		err = s.Generate(ctx, input, o.MaxTokens, smp, func(id int32) error {
			p.Output = append(p.Output, id)
			if id == closeID {
				return engine.ErrStop // stop at the call
			}
			return nil
		})
		if err != nil {
			return passes, err
		}
		text = append(append(text, input[overlap:]...), p.Output...)
		expr, value, ok := chat.Execute(tk.Decode(text))
		if !ok || len(passes) >= o.MaxCalls {
			passes = append(passes, p)
			return passes, nil
		}
		p.Call, p.Result = expr, value
		passes = append(passes, p)
		// the call's closing token was emitted but not yet evaluated
		input = append([]int32{p.Output[len(p.Output)-1]}, tk.EncodeIDs(chat.Result(value), false)...)
		overlap = 1
	}
}

// Text is the whole exchange the passes wrote: outputs and results in order.
func Text(tk interface{ Decode([]int32) string }, passes []Pass) string {
	var all []int32
	for i, p := range passes {
		if i > 0 {
			all = append(all, p.Input[1:]...) // the result (the close token is the last output)
		}
		all = append(all, p.Output...)
	}
	return tk.Decode(all)
}

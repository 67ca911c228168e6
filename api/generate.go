package api

import (
	"context"
	"fmt"

	"stepthrough/engine"
	"stepthrough/engine/chattemplate"
	"stepthrough/engine/sample"
	"stepthrough/engine/tokenizer"
)

// Token is a generated token with its log-probability under the model's
// raw logits (temperature 1, before the sampler chain: what the
// Explorer's softmax panel shows at T = 1) and the most likely tokens.
type Token struct {
	ID      int32
	Text    string // as displayed (a control token by its name)
	Bytes   []byte
	Logprob float64
	Top     []TopLogprob
}

// TopLogprob is one of the most likely tokens at a position.
type TopLogprob struct {
	ID      int32
	Text    string
	Bytes   []byte
	Logprob float64
}

// Delta is what a choice adds as tokens are produced.
type Delta struct {
	Content, Reasoning string
	Tokens             []Token
}

// Choice is one generated answer.
type Choice struct {
	Index     int
	Content   string
	Reasoning string // between <think> and </think> at the start of the reply
	ToolCalls []chattemplate.ToolCall
	Tokens    []Token // with logprobs asked; else nil
	IDs       []int32 // every generated token
	Finish    string  // stop, length or tool_calls
	Seed      uint64
}

// Generator runs a request's choices, each from a session holding the
// prompt (prefilled once, forked per choice).
type Generator struct {
	Tok    *tokenizer.Tokenizer
	Req    *Request
	Prompt *Prompt
	IDs    []int32 // the prompt's tokens
	Max    int     // tokens a choice may generate
	// Watch keeps choice 0's token log-probabilities even when the
	// request did not ask for them (the request's page shows them)
	Watch bool
}

// Choice generates choice i from s (holding the prompt) and the prompt's
// last logits, calling emit as text becomes final. Sampling is the
// Explorer's: the sampler accepts the prompt, then each token, so a seed
// replays the same tokens there.
func (g *Generator) Choice(ctx context.Context, s *engine.Session, logits []float32, i int, emit func(Delta) error) (*Choice, error) {
	p := g.Req.Sampler
	if p.SeedSet {
		p.Seed += uint64(i)
	}
	smp, err := sample.New(p)
	if err != nil {
		return nil, err
	}
	smp.Accept(g.IDs...)
	c := &Choice{Index: i, Seed: smp.Seed(), Finish: "length"}
	sp := newSplitter(g.Req.Stop, g.Prompt)
	var pending []Token
	send := func(d Delta) error {
		if d.Content == "" && d.Reasoning == "" && len(pending) == 0 {
			return nil
		}
		c.Content += d.Content
		c.Reasoning += d.Reasoning
		d.Tokens, pending = pending, nil
		c.Tokens = append(c.Tokens, d.Tokens...)
		return emit(d)
	}
	finish, err := s.Continue(ctx, logits, engine.Gen{Limits: engine.Limits{MaxTokens: g.Max}, Sampler: smp,
		Emit: func(id int32, logits []float32) error {
			c.IDs = append(c.IDs, id) // usage counts every sampled token, an end of generation too
			if g.Tok.IsEOG(id) {
				return nil // the loop ends here (FinishEOS); its text is not the reply's
			}
			if g.Req.Logprobs || g.Watch && i == 0 { // logprobs cover the text's tokens
				pending = append(pending, g.token(logits, id))
			}
			d, done := sp.push(g.Tok.Bytes(id))
			if err := send(d); err != nil {
				return err
			}
			if done {
				return engine.ErrStop
			}
			return nil
		}})
	if err != nil {
		return nil, err
	}
	switch finish {
	case engine.FinishEOS:
		c.Finish = "stop"
	case engine.FinishCaller:
		c.Finish = sp.finish
	}
	if err := send(sp.flush()); err != nil {
		return nil, err
	}
	if sp.call != nil {
		sp.call.ID = fmt.Sprintf("call_%d_%d", i, len(c.IDs))
		c.ToolCalls, c.Finish = []chattemplate.ToolCall{*sp.call}, "tool_calls"
	}
	if !g.Req.Logprobs && !(g.Watch && i == 0) {
		c.Tokens = nil
	}
	return c, nil
}

// token is id's log-probability and the top alternatives at logits.
func (g *Generator) token(logits []float32, id int32) Token {
	lp := sample.LogSoftmax(logits)
	t := Token{ID: id, Text: g.Tok.Display(id), Logprob: lp[id]}
	t.Bytes = []byte(t.Text)
	if n := g.Req.TopLogprobs; n > 0 {
		for _, j := range sample.TopN(lp, n) {
			text := g.Tok.Display(j)
			t.Top = append(t.Top, TopLogprob{ID: j, Text: text, Bytes: []byte(text), Logprob: lp[j]})
		}
	}
	return t
}

package api

import (
	"fmt"

	"stepthrough/engine/chattemplate"
	"stepthrough/engine/sample"
	"stepthrough/engine/stop"
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
	// Internals are the extension's per-token internals of the tokens
	// this delta releases (nil without the extension: a pointer, so a
	// delta of a request without it is one word larger, not three).
	Internals *Internals
}

// Choice is one generated answer.
type Choice struct {
	Index     int
	Content   string
	Reasoning string // between <think> and </think> at the start of the reply
	ToolCalls []chattemplate.ToolCall
	Tokens    []Token          // with logprobs asked; else nil
	IDs       []int32          // every generated token
	Internals []TokenInternals // with the extension: every generated token's
	Finish    string           // stop, length or tool_calls
	Seed      uint64
}

// Generator builds a request's choices from their tokens as a scheduler
// generates them (one sequence per choice in a continuous batch).
type Generator struct {
	Tok    *tokenizer.Tokenizer
	Req    *Request
	Prompt *Prompt
	IDs    []int32 // the prompt's tokens
	Max    int     // tokens a choice may generate
}

// Sampling is choice i's sampler settings: the request's, with the seed
// moved by i when the request set one (each choice differs, and each
// replays in the Explorer, whose sampler also accepts the prompt first).
func (g *Generator) Sampling(i int) sample.Params {
	p := g.Req.Sampler
	if p.SeedSet {
		p.Seed += uint64(i)
	}
	return p
}

// Reply is one choice being built.
type Reply struct {
	g       *Generator
	c       *Choice
	sp      *splitter
	pending []Token
	probed  []TokenInternals // internals waiting for the next delta
	keep    bool             // the request asked for its tokens' log-probabilities
}

// Reply starts choice i.
func (g *Generator) Reply(i int) *Reply {
	return &Reply{g: g, c: &Choice{Index: i, Finish: "length"}, sp: newSplitter(g.Req.Stop, g.Prompt), keep: g.Req.Logprobs}
}

// Token takes the next generated token and the logits it was drawn from.
// It returns the text that became final (Empty when none) and whether the
// reply is complete (a stop sequence or a closed tool call), when the
// generation should end.
func (r *Reply) Token(id int32, logits []float32) (Delta, bool) {
	r.c.IDs = append(r.c.IDs, id) // usage counts every sampled token, an end of generation too
	if r.g.Tok.IsEOG(id) {
		return Delta{}, false // the generation ends here; its text is not the reply's
	}
	if r.keep { // logprobs cover the text's tokens
		r.pending = append(r.pending, r.g.token(logits, id))
	}
	d, done := r.sp.push(r.g.Tok.Bytes(id))
	return r.release(d), done
}

// End finishes the reply with the generation's reason (FinishEOS, the
// token limit, or the stop Token asked for) and returns the text still
// held and the choice.
func (r *Reply) End(finish string) (Delta, *Choice) {
	switch finish {
	case stop.EOS:
		r.c.Finish = "stop"
	case stop.Stop:
		r.c.Finish = r.sp.finish
	}
	d := r.release(r.sp.flush())
	if r.sp.call != nil {
		r.sp.call.ID = fmt.Sprintf("call_%d_%d", r.c.Index, len(r.c.IDs))
		r.c.ToolCalls, r.c.Finish = []chattemplate.ToolCall{*r.sp.call}, "tool_calls"
	}
	return d, r.c
}

// Probe takes the internals of the next token, before Token takes the
// token: the delta that releases the token's text carries them, or a
// delta of their own while its text is held (a stop sequence forming).
func (r *Reply) Probe(t TokenInternals) { r.probed = append(r.probed, t) }

// release adds d to the choice with the tokens waiting for it.
func (r *Reply) release(d Delta) Delta {
	if d.Content == "" && d.Reasoning == "" && len(r.pending) == 0 && len(r.probed) == 0 {
		return Delta{}
	}
	r.c.Content += d.Content
	r.c.Reasoning += d.Reasoning
	d.Tokens, r.pending = r.pending, nil
	r.c.Tokens = append(r.c.Tokens, d.Tokens...)
	if len(r.probed) > 0 {
		d.Internals = &Internals{Tokens: r.probed}
		r.c.Internals = append(r.c.Internals, r.probed...)
		r.probed = nil
	}
	return d
}

// Empty reports a delta with nothing to send.
func (d Delta) Empty() bool {
	return d.Content == "" && d.Reasoning == "" && len(d.Tokens) == 0 && d.Internals == nil
}

// token is id's log-probability and the top alternatives at logits.
// It runs in the scheduler's goroutine for every token of choice 0, so it
// allocates only what it returns.
func (g *Generator) token(logits []float32, id int32) Token {
	lse := sample.LogSumExp(logits)
	t := Token{ID: id, Text: g.Tok.Display(id), Logprob: float64(logits[id]) - lse}
	t.Bytes = []byte(t.Text)
	if n := g.Req.TopLogprobs; n > 0 {
		for _, j := range sample.TopN(logits, n) {
			text := g.Tok.Display(j)
			t.Top = append(t.Top, TopLogprob{ID: j, Text: text, Bytes: []byte(text), Logprob: float64(logits[j]) - lse})
		}
	}
	return t
}

package api

import (
	"stepthrough/engine/chattemplate"
)

// Usage counts a request's tokens.
type Usage struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptTokensDetails break the prompt's tokens down as OpenAI does:
// CachedTokens were read from KV blocks kept from earlier requests (or
// another request running with the same prefix), not computed again.
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// NewUsage sums the choices' tokens (each generated token once); cached
// is how many prompt tokens came from the prefix cache.
func NewUsage(prompt, cached int, choices []*Choice) Usage {
	u := Usage{PromptTokens: prompt, PromptTokensDetails: &PromptTokensDetails{CachedTokens: cached}}
	for _, c := range choices {
		u.CompletionTokens += len(c.IDs)
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// ChatCompletion is a /v1/chat/completions response.
type ChatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []ChatChoice `json:"choices"`
	Usage             *Usage       `json:"usage,omitempty"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

// ChatChoice is one choice of a response, or of a streamed chunk (Delta).
type ChatChoice struct {
	Index        int           `json:"index"`
	Message      *ChatMessage  `json:"message,omitempty"`
	Delta        *ChatMessage  `json:"delta,omitempty"`
	Logprobs     *ChatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
	Stepthrough  *Internals    `json:"stepthrough,omitempty"` // the extension's (stepthrough.go)
}

// ChatMessage is the assistant's message (or a chunk's part of it).
// ReasoningContent is the reply's thinking, as llama-server and DeepSeek
// name it.
type ChatMessage struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []WireToolCall `json:"tool_calls,omitempty"`
}

// WireToolCall is a tool call as OpenAI writes it.
type WireToolCall struct {
	Index    *int   `json:"index,omitempty"` // in a streamed chunk
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ChatLogprobs are a chat choice's log-probabilities.
type ChatLogprobs struct {
	Content []TokenLogprob `json:"content"`
}

// TokenLogprob is one token's entry.
type TokenLogprob struct {
	Token       string     `json:"token"`
	Logprob     float64    `json:"logprob"`
	Bytes       []int      `json:"bytes"`
	TopLogprobs []TopEntry `json:"top_logprobs"`
	ID          int32      `json:"id"` // llama-server's extension: the token id
}

// TopEntry is one alternative in top_logprobs.
type TopEntry struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
	ID      int32   `json:"id"`
}

func ints(b []byte) []int {
	out := make([]int, len(b))
	for i, x := range b {
		out[i] = int(x)
	}
	return out
}

// ChatTokens writes tokens as chat logprobs.
func ChatTokens(ts []Token) []TokenLogprob {
	out := make([]TokenLogprob, 0, len(ts))
	for _, t := range ts {
		e := TokenLogprob{Token: t.Text, Logprob: t.Logprob, Bytes: ints(t.Bytes), ID: t.ID, TopLogprobs: []TopEntry{}}
		for _, x := range t.Top {
			e.TopLogprobs = append(e.TopLogprobs, TopEntry{Token: x.Text, Logprob: x.Logprob, Bytes: ints(x.Bytes), ID: x.ID})
		}
		out = append(out, e)
	}
	return out
}

func wireCalls(calls []chattemplate.ToolCall, streamed bool) []WireToolCall {
	var out []WireToolCall
	for i, c := range calls {
		w := WireToolCall{ID: c.ID, Type: "function"}
		w.Function.Name, w.Function.Arguments = c.Name, c.Arguments
		if streamed {
			w.Index = &i
		}
		out = append(out, w)
	}
	return out
}

// ChatResponse is the whole response of a request that did not stream.
func ChatResponse(id, model string, created int64, choices []*Choice, u Usage, logprobs bool) ChatCompletion {
	r := ChatCompletion{ID: id, Object: "chat.completion", Created: created, Model: model, Usage: &u, SystemFingerprint: Fingerprint}
	for _, c := range choices {
		finish := c.Finish
		text := c.Content
		m := &ChatMessage{Role: "assistant", Content: &text, ReasoningContent: c.Reasoning, ToolCalls: wireCalls(c.ToolCalls, false)}
		if len(c.ToolCalls) > 0 && text == "" {
			m.Content = nil
		}
		ch := ChatChoice{Index: c.Index, Message: m, FinishReason: &finish, Stepthrough: internals(c.Internals)}
		if logprobs {
			ch.Logprobs = &ChatLogprobs{Content: ChatTokens(c.Tokens)}
		}
		r.Choices = append(r.Choices, ch)
	}
	return r
}

// ChatChunk is a streamed chunk of choice i carrying d.
func ChatChunk(id, model string, created int64, i int, d Delta, logprobs bool) ChatCompletion {
	m := &ChatMessage{ReasoningContent: d.Reasoning}
	if d.Content != "" {
		m.Content = &d.Content
	}
	ch := ChatChoice{Index: i, Delta: m, Stepthrough: d.Internals}
	if logprobs && len(d.Tokens) > 0 {
		ch.Logprobs = &ChatLogprobs{Content: ChatTokens(d.Tokens)}
	}
	return ChatCompletion{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, Choices: []ChatChoice{ch}, SystemFingerprint: Fingerprint}
}

// ChatRoleChunk opens choice i's stream; ChatEndChunk closes it with the
// finish reason (and the tool calls, which are sent whole).
func ChatRoleChunk(id, model string, created int64, i int) ChatCompletion {
	empty := ""
	ch := ChatChoice{Index: i, Delta: &ChatMessage{Role: "assistant", Content: &empty}}
	return ChatCompletion{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, Choices: []ChatChoice{ch}, SystemFingerprint: Fingerprint}
}

func ChatEndChunk(id, model string, created int64, c *Choice) ChatCompletion {
	finish := c.Finish
	ch := ChatChoice{Index: c.Index, Delta: &ChatMessage{ToolCalls: wireCalls(c.ToolCalls, true)}, FinishReason: &finish}
	return ChatCompletion{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, Choices: []ChatChoice{ch}, SystemFingerprint: Fingerprint}
}

// UsageChunk is the last chunk when the client asked for usage.
func UsageChunk(id, model string, created int64, u Usage) ChatCompletion {
	return ChatCompletion{ID: id, Object: "chat.completion.chunk", Created: created, Model: model, Choices: []ChatChoice{}, Usage: &u, SystemFingerprint: Fingerprint}
}

// Fingerprint names the backend configuration, as OpenAI's
// system_fingerprint does.
const Fingerprint = "stepthrough"

// TextCompletion is a /v1/completions response (or streamed chunk).
type TextCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []TextChoice `json:"choices"`
	Usage   *Usage       `json:"usage,omitempty"`
}

// TextChoice is one completion choice.
type TextChoice struct {
	Text         string        `json:"text"`
	Index        int           `json:"index"`
	Logprobs     *TextLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
	Stepthrough  *Internals    `json:"stepthrough,omitempty"` // the extension's (stepthrough.go)
}

// TextLogprobs are the legacy completions' log-probabilities.
type TextLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

func textLogprobs(ts []Token, offset int) *TextLogprobs {
	l := &TextLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
	for _, t := range ts {
		l.Tokens = append(l.Tokens, t.Text)
		l.TokenLogprobs = append(l.TokenLogprobs, t.Logprob)
		top := map[string]float64{}
		for _, x := range t.Top {
			if _, dup := top[x.Text]; !dup {
				top[x.Text] = x.Logprob
			}
		}
		l.TopLogprobs = append(l.TopLogprobs, top)
		l.TextOffset = append(l.TextOffset, offset)
		offset += len(t.Bytes)
	}
	return l
}

// TextResponse is a whole completions response.
func TextResponse(id, model string, created int64, choices []*Choice, u Usage, logprobs bool) TextCompletion {
	r := TextCompletion{ID: id, Object: "text_completion", Created: created, Model: model, Usage: &u}
	for _, c := range choices {
		finish := c.Finish
		ch := TextChoice{Text: c.Content, Index: c.Index, FinishReason: &finish, Stepthrough: internals(c.Internals)}
		if logprobs {
			ch.Logprobs = textLogprobs(c.Tokens, 0)
		}
		r.Choices = append(r.Choices, ch)
	}
	return r
}

// TextChunk is a streamed completions chunk (finish set on the last).
func TextChunk(id, model string, created int64, i int, d Delta, finish string, logprobs bool, offset int) TextCompletion {
	ch := TextChoice{Text: d.Content, Index: i, Stepthrough: d.Internals}
	if finish != "" {
		ch.FinishReason = &finish
	}
	if logprobs && len(d.Tokens) > 0 {
		ch.Logprobs = textLogprobs(d.Tokens, offset)
	}
	return TextCompletion{ID: id, Object: "text_completion", Created: created, Model: model, Choices: []TextChoice{ch}}
}

// Model is an entry of GET /v1/models.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList is GET /v1/models.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}

package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"

	"stepthrough/engine/chattemplate"
	"stepthrough/engine/sample"
)

// Limits bound what one request may ask for.
type Limits struct {
	MaxTokens   int // the most tokens a choice may generate (max_tokens above it is refused)
	MaxN        int // choices per request
	MaxMessages int
	MaxStop     int // stop sequences (OpenAI's limit is 4)
	MaxTools    int
}

// DefaultLimits are the server's unless configured.
var DefaultLimits = Limits{MaxTokens: 512, MaxN: 8, MaxMessages: 256, MaxStop: 4, MaxTools: 32}

// MaxTopLogprobs is OpenAI's bound on top_logprobs.
const MaxTopLogprobs = 20

// Request is a parsed, validated chat or completion request.
type Request struct {
	Chat         bool
	Model        string
	Messages     []chattemplate.Message // chat
	Prompt       string                 // completions
	Tools        []chattemplate.Tool
	ToolChoice   string // auto, none, required, or a function's name
	Stream       bool
	IncludeUsage bool
	MaxTokens    int // 0: until the context or the cap
	N            int
	Stop         []string
	Logprobs     bool
	TopLogprobs  int
	Sampler      sample.Params
	// IgnoreEOS generates max_tokens whatever the model samples
	// (llama-server's and vLLM's extension, for fixed-length benchmark
	// replies): an end-of-generation token is then generated like any
	// other and is not text.
	IgnoreEOS bool
	// CacheSalt (vLLM's cache_salt) narrows whose prompts the request may
	// find in the prefix cache to those sent with the same salt (and
	// otherwise the same scope: the server's key, or the client's address).
	CacheSalt string
	// Stepthrough is the extension object (nil: absent).
	Stepthrough *Stepthrough
}

// MaxCacheSalt is the longest cache_salt, in bytes.
const MaxCacheSalt = 256

// wire is the body of both endpoints (the fields each one reads).
type wire struct {
	Model         string          `json:"model"`
	Messages      []wireMessage   `json:"messages"`
	Prompt        json.RawMessage `json:"prompt"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	Seed                *int64          `json:"seed"`
	Stop                json.RawMessage `json:"stop"`
	N                   *int            `json:"n"`
	Logprobs            json.RawMessage `json:"logprobs"` // chat: bool; completions: an integer
	TopLogprobs         *int            `json:"top_logprobs"`
	PresencePenalty     *float64        `json:"presence_penalty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty"`
	Tools               []wireTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	Echo                bool            `json:"echo"`
	// llama.cpp server's extensions
	TopK          *int     `json:"top_k"`
	MinP          *float64 `json:"min_p"`
	RepeatPenalty *float64 `json:"repeat_penalty"`
	RepeatLastN   *int     `json:"repeat_last_n"`
	IgnoreEOS     bool     `json:"ignore_eos"`
	// vLLM's
	CacheSalt *string `json:"cache_salt"`
	// Stepthrough's own (stepthrough.go)
	Stepthrough json.RawMessage `json:"stepthrough"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// DecodeChat parses and validates a /v1/chat/completions body. Its work
// is bounded by the body's size and the schema bounds; it stops between
// tools' schemas when ctx ends.
func DecodeChat(ctx context.Context, body []byte, lim Limits) (*Request, *Error) {
	return decode(ctx, body, lim, true)
}

// DecodeCompletion parses and validates a /v1/completions body.
func DecodeCompletion(ctx context.Context, body []byte, lim Limits) (*Request, *Error) {
	return decode(ctx, body, lim, false)
}

func decode(ctx context.Context, body []byte, lim Limits, chat bool) (*Request, *Error) {
	var w wire
	d := json.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(&w); err != nil {
		return nil, invalid("", "We could not parse the JSON body of your request: %v", err)
	}
	if d.More() {
		return nil, invalid("", "The JSON body has more than one value")
	}
	r := &Request{Chat: chat, Model: strings.TrimSpace(w.Model), Stream: w.Stream, N: 1, Sampler: sample.Defaults(), IgnoreEOS: w.IgnoreEOS}
	if w.StreamOptions != nil {
		r.IncludeUsage = w.StreamOptions.IncludeUsage
	}
	var e *Error
	if chat {
		e = r.messages(w, lim)
	} else {
		e = r.prompt(w)
	}
	if e != nil {
		return nil, e
	}
	for _, f := range []func(wire, Limits) *Error{r.counts, r.stop, r.logprobs, r.sampling, r.cacheSalt, r.stepthrough} {
		if e := f(w, lim); e != nil {
			return nil, e
		}
	}
	if e := r.tools(ctx, w, lim); e != nil {
		return nil, e
	}
	return r, nil
}

func (r *Request) messages(w wire, lim Limits) *Error {
	if len(w.Messages) == 0 {
		return invalid("messages", "messages must be a non-empty array")
	}
	if len(w.Messages) > lim.MaxMessages {
		return invalid("messages", "%d messages; the limit is %d", len(w.Messages), lim.MaxMessages)
	}
	for i, m := range w.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		default:
			return invalid(param+".role", "role %q: one of system, developer, user, assistant, tool", m.Role)
		}
		text, err := content(m.Content)
		if err != nil {
			return invalid(param+".content", "%v", err)
		}
		msg := chattemplate.Message{Role: m.Role, Content: text, ToolCallID: m.ToolCallID, Name: m.Name}
		if m.Role == "developer" { // OpenAI's newer name for the system role
			msg.Role = "system"
		}
		for j, c := range m.ToolCalls {
			if m.Role != "assistant" || c.Function.Name == "" || !json.Valid([]byte(c.Function.Arguments)) {
				return invalid(fmt.Sprintf("%s.tool_calls[%d]", param, j), "a tool call is an assistant's, with a function name and arguments as JSON text")
			}
			msg.ToolCalls = append(msg.ToolCalls, chattemplate.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			return invalid(param+".tool_call_id", "a tool message names the call it answers (tool_call_id)")
		}
		r.Messages = append(r.Messages, msg)
	}
	return nil
}

// content reads a message's content: a string, null, or text parts.
func content(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("content must be a string or an array of text parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part type %q: only text parts are supported", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func (r *Request) prompt(w wire) *Error {
	if w.Echo {
		return invalid("echo", "echo is not supported")
	}
	var s string
	if json.Unmarshal(w.Prompt, &s) == nil {
		r.Prompt = s
		return nil
	}
	var list []string
	if json.Unmarshal(w.Prompt, &list) == nil && len(list) == 1 {
		r.Prompt = list[0]
		return nil
	}
	return invalid("prompt", "prompt must be a string (or an array of one string)")
}

func (r *Request) counts(w wire, lim Limits) *Error {
	max := w.MaxTokens
	if w.MaxCompletionTokens != nil {
		max = w.MaxCompletionTokens
	}
	if max != nil {
		switch {
		case *max < 1:
			return invalid("max_tokens", "max_tokens %d: at least 1", *max)
		case *max > lim.MaxTokens:
			return invalid("max_tokens", "max_tokens %d is over this server's cap of %d", *max, lim.MaxTokens)
		}
		r.MaxTokens = *max
	}
	if w.N != nil {
		if *w.N < 1 || *w.N > lim.MaxN {
			return invalid("n", "n %d: choose 1 to %d", *w.N, lim.MaxN)
		}
		r.N = *w.N
	}
	return nil
}

func (r *Request) stop(w wire, lim Limits) *Error {
	if len(w.Stop) == 0 || string(w.Stop) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(w.Stop, &s) == nil {
		r.Stop = []string{s}
	} else if json.Unmarshal(w.Stop, &r.Stop) != nil {
		return invalid("stop", "stop must be a string or an array of strings")
	}
	if len(r.Stop) > lim.MaxStop {
		return invalid("stop", "%d stop sequences; the limit is %d", len(r.Stop), lim.MaxStop)
	}
	for _, s := range r.Stop {
		if s == "" || len(s) > 256 {
			return invalid("stop", "a stop sequence is 1 to 256 bytes")
		}
	}
	return nil
}

func (r *Request) cacheSalt(w wire, _ Limits) *Error {
	if w.CacheSalt == nil {
		return nil
	}
	if n := len(*w.CacheSalt); n < 1 || n > MaxCacheSalt {
		return invalid("cache_salt", "cache_salt is a string of 1 to %d bytes, got %d", MaxCacheSalt, n)
	}
	r.CacheSalt = *w.CacheSalt
	return nil
}

func (r *Request) logprobs(w wire, _ Limits) *Error {
	if len(w.Logprobs) == 0 || string(w.Logprobs) == "null" {
		if w.TopLogprobs != nil && r.Chat && *w.TopLogprobs > 0 {
			return invalid("top_logprobs", "top_logprobs needs logprobs: true")
		}
		return nil
	}
	if r.Chat {
		if json.Unmarshal(w.Logprobs, &r.Logprobs) != nil {
			return invalid("logprobs", "logprobs must be true or false")
		}
		if w.TopLogprobs != nil {
			if *w.TopLogprobs < 0 || *w.TopLogprobs > MaxTopLogprobs {
				return invalid("top_logprobs", "top_logprobs %d: choose 0 to %d", *w.TopLogprobs, MaxTopLogprobs)
			}
			if *w.TopLogprobs > 0 && !r.Logprobs {
				return invalid("top_logprobs", "top_logprobs needs logprobs: true")
			}
			r.TopLogprobs = *w.TopLogprobs
		}
		return nil
	}
	var n int
	if json.Unmarshal(w.Logprobs, &n) != nil || n < 0 || n > 5 {
		return invalid("logprobs", "logprobs is the number of top tokens to return, 0 to 5")
	}
	r.Logprobs, r.TopLogprobs = true, n
	return nil
}

func (r *Request) sampling(w wire, _ Limits) *Error {
	p := &r.Sampler
	set := func(dst *float64, v *float64, name string, lo, hi float64) *Error {
		if v == nil {
			return nil
		}
		if math.IsNaN(*v) || *v < lo || *v > hi {
			return invalid(name, "%s %v: choose %g to %g", name, *v, lo, hi)
		}
		*dst = *v
		return nil
	}
	for _, s := range []struct {
		dst    *float64
		v      *float64
		name   string
		lo, hi float64
	}{
		{&p.Temperature, w.Temperature, "temperature", 0, 2},
		{&p.TopP, w.TopP, "top_p", 0, 1},
		{&p.PresencePenalty, w.PresencePenalty, "presence_penalty", -2, 2},
		{&p.FrequencyPenalty, w.FrequencyPenalty, "frequency_penalty", -2, 2},
		{&p.MinP, w.MinP, "min_p", 0, 1},
		{&p.RepeatPenalty, w.RepeatPenalty, "repeat_penalty", 0.01, 10},
	} {
		if e := set(s.dst, s.v, s.name, s.lo, s.hi); e != nil {
			return e
		}
	}
	if w.TopK != nil {
		if *w.TopK < 0 {
			return invalid("top_k", "top_k %d: at least 0 (0 keeps every token)", *w.TopK)
		}
		p.TopK = *w.TopK
	}
	if w.RepeatLastN != nil {
		p.RepeatLastN = *w.RepeatLastN
	}
	if w.Seed != nil && *w.Seed != -1 {
		if *w.Seed < 0 {
			return invalid("seed", "seed %d: a whole number from 0 (-1: a fresh one)", *w.Seed)
		}
		p.Seed, p.SeedSet = uint64(*w.Seed), true
	}
	if err := p.Validate(); err != nil {
		return invalid("", "%v", err)
	}
	return nil
}

func (r *Request) tools(ctx context.Context, w wire, lim Limits) *Error {
	if len(w.Tools) > lim.MaxTools {
		return invalid("tools", "%d tools; the limit is %d", len(w.Tools), lim.MaxTools)
	}
	for i, t := range w.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" || !functionName.MatchString(t.Function.Name) {
			return invalid(param, "a tool is {\"type\": \"function\", \"function\": {\"name\": ...}}, its name 1 to 64 letters, digits, _ or -")
		}
		if ctx.Err() != nil {
			return &Error{Status: 499, Message: "The request was cancelled", Type: "invalid_request_error"}
		}
		tool := chattemplate.Tool{Name: t.Function.Name, Description: t.Function.Description}
		if len(t.Function.Parameters) > 0 && string(t.Function.Parameters) != "null" {
			if err := validSchema(t.Function.Parameters); err != nil {
				return invalid(param+".function.parameters", "parameters is not a valid JSON Schema: %v", err)
			}
			if json.Unmarshal(t.Function.Parameters, &tool.Parameters) != nil {
				return invalid(param+".function.parameters", "parameters must be a JSON Schema object")
			}
		}
		r.Tools = append(r.Tools, tool)
	}
	r.ToolChoice = "auto"
	if len(r.Tools) == 0 {
		r.ToolChoice = "none"
	}
	if len(w.ToolChoice) == 0 || string(w.ToolChoice) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(w.ToolChoice, &s) == nil {
		if s != "auto" && s != "none" && s != "required" {
			return invalid("tool_choice", "tool_choice %q: auto, none, required, or {\"type\": \"function\", \"function\": {\"name\": ...}}", s)
		}
		r.ToolChoice = s
	} else {
		var f struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(w.ToolChoice, &f) != nil || f.Function.Name == "" {
			return invalid("tool_choice", "tool_choice must be auto, none, required, or name a function")
		}
		r.ToolChoice = f.Function.Name
	}
	if r.ToolChoice != "none" && len(r.Tools) == 0 {
		return invalid("tool_choice", "tool_choice %q needs tools", r.ToolChoice)
	}
	return nil
}

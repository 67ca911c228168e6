package api

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// Bad requests are refused with OpenAI's error object naming the
// parameter; good ones decode to the engine's settings.
func TestDecode(t *testing.T) {
	bad := []struct {
		name, body, param string
		chat              bool
	}{
		{"malformed JSON", `{"messages": [`, "", true},
		{"two values", `{} {}`, "", true},
		{"no messages", `{"model": "m"}`, "messages", true},
		{"a bad role", `{"messages": [{"role": "robot", "content": "x"}]}`, "messages[0].role", true},
		{"an image part", `{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}`, "messages[0].content", true},
		{"a tool message without its call", `{"messages": [{"role": "tool", "content": "4"}]}`, "messages[0].tool_call_id", true},
		{"max_tokens over the cap", `{"messages": [{"role": "user", "content": "x"}], "max_tokens": 100000}`, "max_tokens", true},
		{"max_tokens 0", `{"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}`, "max_tokens", true},
		{"n 0", `{"messages": [{"role": "user", "content": "x"}], "n": 0}`, "n", true},
		{"temperature 3", `{"messages": [{"role": "user", "content": "x"}], "temperature": 3}`, "temperature", true},
		{"top_p 2", `{"messages": [{"role": "user", "content": "x"}], "top_p": 2}`, "top_p", true},
		{"five stops", `{"messages": [{"role": "user", "content": "x"}], "stop": ["a","b","c","d","e"]}`, "stop", true},
		{"an empty stop", `{"messages": [{"role": "user", "content": "x"}], "stop": ""}`, "stop", true},
		{"top_logprobs without logprobs", `{"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2}`, "top_logprobs", true},
		{"top_logprobs 21", `{"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 21}`, "top_logprobs", true},
		{"a negative seed", `{"messages": [{"role": "user", "content": "x"}], "seed": -5}`, "seed", true},
		{"a tool's bad name", `{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "a b"}}]}`, "tools[0]", true},
		{"a schema that is not one", `{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "objekt"}}}]}`, "tools[0].function.parameters", true},
		{"a schema that is not an object", `{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": [1]}}]}`, "tools[0].function.parameters", true},
		{"tool_choice without tools", `{"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"}`, "tool_choice", true},
		{"a completion without a prompt", `{"model": "m"}`, "prompt", false},
		{"completion logprobs 6", `{"prompt": "x", "logprobs": 6}`, "logprobs", false},
		{"echo", `{"prompt": "x", "echo": true}`, "echo", false},
		{"an empty cache_salt", `{"prompt": "x", "cache_salt": ""}`, "cache_salt", false},
		{"a cache_salt too long", `{"prompt": "x", "cache_salt": "` + strings.Repeat("s", MaxCacheSalt+1) + `"}`, "cache_salt", false},
		{"a cache_salt that is not a string", `{"messages": [{"role": "user", "content": "x"}], "cache_salt": 5}`, "", true},
	}
	for _, b := range bad {
		_, e := decode(context.Background(), []byte(b.body), DefaultLimits, b.chat)
		if e == nil || e.Status != 400 || e.Type != "invalid_request_error" {
			t.Errorf("%s: %+v", b.name, e)
			continue
		}
		if got := ""; e.Param != nil {
			got = *e.Param
			if got != b.param {
				t.Errorf("%s: param %q, want %q (%s)", b.name, got, b.param, e.Message)
			}
		} else if b.param != "" {
			t.Errorf("%s: no param, want %q", b.name, b.param)
		}
		if strings.Contains(string(e.JSON()), "\n") || !strings.HasPrefix(string(e.JSON()), `{"error":{"message":`) {
			t.Errorf("%s: error body %s", b.name, e.JSON())
		}
	}
	r, e := DecodeChat(context.Background(), []byte(`{"model": "lesson.gguf", "messages": [{"role": "developer", "content": [{"type": "text", "text": "Be brief."}]}, {"role": "user", "content": "Hi"}],
		"temperature": 0.5, "top_p": 0.9, "seed": 7, "stop": "x", "n": 2, "logprobs": true, "top_logprobs": 3, "max_tokens": 9,
		"presence_penalty": 0.5, "top_k": 5, "min_p": 0.1, "repeat_penalty": 1.1, "stream": true, "stream_options": {"include_usage": true},
		"tools": [{"type": "function", "function": {"name": "calculator", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}}}}],
		"tool_choice": {"type": "function", "function": {"name": "calculator"}}, "cache_salt": "class 3B"}`), DefaultLimits)
	if e != nil {
		t.Fatal(e)
	}
	p := r.Sampler
	if r.Messages[0].Role != "system" || r.Messages[0].Content != "Be brief." || p.Temperature != 0.5 || p.TopP != 0.9 || p.Seed != 7 || !p.SeedSet ||
		r.Stop[0] != "x" || r.N != 2 || !r.Logprobs || r.TopLogprobs != 3 || r.MaxTokens != 9 || p.PresencePenalty != 0.5 || p.TopK != 5 ||
		p.MinP != 0.1 || p.RepeatPenalty != 1.1 || !r.Stream || !r.IncludeUsage || r.Tools[0].Name != "calculator" || r.ToolChoice != "calculator" || r.CacheSalt != "class 3B" {
		t.Errorf("decoded %+v", r)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"messages": [{"role": "user", "content": "x"}], "stop": ["a"], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]}`), true)
	f.Add([]byte(`{"prompt": ["x"], "logprobs": 2, "seed": 3}`), false)
	f.Add([]byte(`{"prompt": "x", "stepthrough": {"logit_lens": {"top_k": 3}, "attention": {"layers": [0], "heads": [1, 2]}, "residual_norms": true, "ablate": "L1H1"}}`), false)
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		r, e := decode(context.Background(), body, DefaultLimits, chat)
		if (r == nil) == (e == nil) {
			t.Fatalf("request %v, error %v", r, e)
		}
		if e != nil && (e.Status < 400 || e.Message == "") {
			t.Fatalf("error %+v", e)
		}
		if r != nil && (r.N < 1 || r.MaxTokens > DefaultLimits.MaxTokens || len(r.Stop) > DefaultLimits.MaxStop || r.Sampler.Validate() != nil) {
			t.Fatalf("accepted %+v", r)
		}
		if r == nil || r.Stepthrough == nil {
			return
		}
		if st := r.Stepthrough; st.LensTop < 0 || st.LensTop > MaxLensTop || len(st.Layers) > MaxProbeList || len(st.Heads) > MaxProbeList ||
			slices.ContainsFunc(append(st.Layers, st.Heads...), func(i int) bool { return i < 0 }) {
			t.Fatalf("accepted %+v", st)
		}
	})
}

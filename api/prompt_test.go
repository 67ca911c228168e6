package api

import (
	"context"
	"testing"

	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
	"stepthrough/engine/tokenizer"
	"stepthrough/models"
)

func lessonTokenizer(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	f, err := gguf.Parse(models.Lesson)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.FromFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return m.Tokenizer
}

// The lesson model's conversations with its calculator are written in the
// format it was trained on; other conversations through its stored
// template.
func TestBuildLesson(t *testing.T) {
	tk := lessonTokenizer(t)
	req := func(body string) *Request {
		r, e := DecodeChat(context.Background(), []byte(body), DefaultLimits)
		if e != nil {
			t.Fatal(e)
		}
		return r
	}
	tools := `"tools": [{"type": "function", "function": {"name": "calculator"}}]`
	for _, tt := range []struct {
		name, body, want string
		dialect          bool
	}{
		{"plain chat", `{"messages": [{"role": "user", "content": "Hi"}]}`, "<|user|>Hi<|end|><|assistant|>", false},
		{"tools offered", `{"messages": [{"role": "user", "content": "What is 2 + 3?"}], ` + tools + `}`,
			"<|system|>You can use the calculator.<|end|><|user|>What is 2 + 3?<|end|><|assistant|>", true},
		{"a result comes back", `{"messages": [{"role": "user", "content": "What is 2 + 3?"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": "{\"expression\":\"2+3\"}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "5"}], ` + tools + `}`,
			"<|system|>You can use the calculator.<|end|><|user|>What is 2 + 3?<|end|><|assistant|><calc>2+3</calc><result>5</result>", true},
		{"a forced call", `{"messages": [{"role": "user", "content": "What is 2 + 3?"}], ` + tools + `, "tool_choice": "required"}`,
			"<|system|>You can use the calculator.<|end|><|user|>What is 2 + 3?<|end|><|assistant|><calc>", true},
	} {
		p, e := Build(req(tt.body), tk)
		if e != nil {
			t.Fatalf("%s: %v", tt.name, e)
		}
		if p.Text != tt.want || (p.Dialect != nil) != tt.dialect {
			t.Errorf("%s: %q (dialect %v), want %q", tt.name, p.Text, p.Dialect, tt.want)
		}
	}
	if _, e := Build(req(`{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "weather"}}]}`), tk); e == nil || e.Param == nil || *e.Param != "tools" {
		t.Errorf("a tool the lesson model does not know: %v", e)
	}
	if _, e := Build(req(`{"messages": [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "c", "content": "5"}]}`), tk); e == nil {
		t.Error("a tool result without a call: no error")
	}
}

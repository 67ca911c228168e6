package chattemplate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stepthrough/engine/chat"
)

var conversation = []Message{
	{Role: "system", Content: "You are a helpful assistant."},
	{Role: "user", Content: "What is the capital of France?"},
	{Role: "assistant", Content: "Paris."},
	{Role: "user", Content: "And of Spain?"},
}

// The chat templates of five model families (testdata/*.jinja, as their
// GGUF files store them) render byte for byte the prompt format each
// family documents (testdata/*.want).
func TestFamilies(t *testing.T) {
	for _, f := range []struct {
		name, bos, eos string
		system         bool
	}{
		{"chatml", "", "<|im_end|>", true},
		{"llama3", "<|begin_of_text|>", "<|eot_id|>", true},
		{"mistral", "<s>", "</s>", false},
		{"gemma", "<bos>", "<eos>", false},
		{"phi3", "<s>", "<|endoftext|>", true},
	} {
		src, err := os.ReadFile(filepath.Join("testdata", f.name+".jinja"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("testdata", f.name+".want"))
		if err != nil {
			t.Fatal(err)
		}
		tm, err := New(string(src), f.bos, f.eos)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		msgs := conversation
		if !f.system {
			msgs = msgs[1:]
		}
		got, err := tm.Render(msgs, nil, true)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		if got != string(want) {
			t.Errorf("%s:\n got %q\nwant %q", f.name, got, want)
		}
	}
}

// The lesson model's stored template renders what chat.Render writes, and
// a model without a template gets ChatML.
func TestLessonAndDefault(t *testing.T) {
	tm, err := New(chat.Template, "<|endoftext|>", "<|endoftext|>")
	if err != nil {
		t.Fatal(err)
	}
	var cm []chat.Message
	for _, m := range conversation {
		cm = append(cm, chat.Message{Role: m.Role, Content: m.Content})
	}
	want, _ := chat.Render(cm, true)
	if got, err := tm.Render(conversation, nil, true); err != nil || got != want {
		t.Errorf("lesson template: %q %v, want %q", got, err, want)
	}
	d, err := New("", "", "")
	if err != nil || !d.Default {
		t.Fatal(err)
	}
	want2, _ := os.ReadFile(filepath.Join("testdata", "chatml.want"))
	if got, _ := d.Render(conversation, nil, true); got != string(want2) {
		t.Errorf("default: %q", got)
	}
}

// Tools and tool calls reach the template in Hugging Face's layout.
func TestToolsReachTheTemplate(t *testing.T) {
	src := "{% for t in tools %}[{{ t.function.name }}:{{ t.function.parameters.properties.expression.type }}]{% endfor %}" +
		"{% for m in messages %}{% if m.tool_calls %}{% for c in m.tool_calls %}<{{ c.function.name }} {{ c.function.arguments.expression }} {{ c.id }}>{% endfor %}{% elif m.role == 'tool' %}({{ m.tool_call_id }}={{ m.content }}){% else %}{{ m.content }}{% endif %}{% endfor %}"
	tm, err := New(src, "", "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := tm.Render([]Message{
		{Role: "user", Content: "347+85?"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "calculator", Arguments: `{"expression":"347+85"}`}}},
		{Role: "tool", ToolCallID: "call_1", Content: "432"},
	}, []Tool{{Name: "calculator", Parameters: map[string]any{"type": "object", "properties": map[string]any{"expression": map[string]any{"type": "string"}}}}}, false)
	if want := "[calculator:string]347+85?<calculator 347+85 call_1>(call_1=432)"; err != nil || got != want {
		t.Errorf("got %q %v, want %q", got, err, want)
	}
}

// A template that fails (raise_exception, a bad expression) is an error,
// never a panic; so is one that does not compile.
func TestBadTemplates(t *testing.T) {
	src, _ := os.ReadFile(filepath.Join("testdata", "mistral.jinja"))
	tm, err := New(string(src), "<s>", "</s>")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Render(conversation, nil, true); err == nil || !strings.Contains(err.Error(), "roles must alternate") {
		t.Errorf("a system message to Mistral: %v", err)
	}
	if _, err := New("{% for %}", "", ""); err == nil {
		t.Error("a template that does not compile: no error")
	}
	if _, err := tm.Render(nil, nil, true); err == nil {
		t.Error("no messages: no error")
	}
}

func FuzzRender(f *testing.F) {
	f.Add(Default, "hi")
	f.Add("{{ messages[0].content | upper }}{{ raise_exception('x') }}", "x")
	f.Fuzz(func(t *testing.T, src, content string) {
		tm, err := New(src, "<s>", "</s>")
		if err != nil {
			return
		}
		tm.Render([]Message{{Role: "user", Content: content}}, nil, true) // must not panic
	})
}

// Package chattemplate renders a model's chat template: the Jinja program a
// GGUF file stores as tokenizer.chat_template, which turns a conversation
// (and the tools offered) into the prompt text the model was trained on,
// its special-token markup included. The template's markup is then parsed
// as control tokens; the messages' own text is not (RenderPlain says where
// it lies), so a user cannot forge a turn by typing markers. A model
// without a template gets
// Default (ChatML), as llama.cpp falls back to it.
package chattemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/ardanlabs/jinja"
)

// Message is one turn of a conversation.
type Message struct {
	Role       string     `json:"role"` // system, user, assistant or tool
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // an assistant's calls
	ToolCallID string     `json:"tool_call_id,omitempty"` // the call a tool message answers
	Name       string     `json:"name,omitempty"`
}

// ToolCall is a function call an assistant made; Arguments is JSON text.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is a function offered to the model; Parameters is a JSON Schema.
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

// Default is the template of a model that stores none: ChatML.
const Default = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

// MaxSource bounds a template read from a model file.
const MaxSource = 1 << 20

// Template is a compiled chat template with the model's BOS and EOS text
// (templates write them as bos_token and eos_token).
type Template struct {
	Source  string
	Default bool // the model stores no template: Default is used
	t       *jinja.Template
	bos     string
	eos     string
}

// New compiles source (empty: Default) for a model whose BOS and EOS
// tokens are bos and eos.
func New(source, bos, eos string) (*Template, error) {
	t := &Template{Source: source, bos: bos, eos: eos}
	if source == "" {
		t.Source, t.Default = Default, true
	}
	if len(t.Source) > MaxSource {
		return nil, fmt.Errorf("chat template: %d bytes; the limit is %d", len(t.Source), MaxSource)
	}
	var err error
	if t.t, err = jinja.Compile(t.Source); err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	return t, nil
}

// Render formats msgs (and tools, when any are offered) as the template
// does; with addGenerationPrompt the text ends where the assistant's reply
// begins.
func (t *Template) Render(msgs []Message, tools []Tool, addGenerationPrompt bool) (string, error) {
	return t.render(msgs, tools, addGenerationPrompt, func(s string) string { return s })
}

// render runs the template on the conversation with each string the
// caller supplied passed through mark.
func (t *Template) render(msgs []Message, tools []Tool, addGenerationPrompt bool, mark func(string) string) (out string, err error) {
	if len(msgs) == 0 {
		return "", errors.New("chat template: no messages")
	}
	defer func() { // a template from a file is untrusted: its failures are errors
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("chat template: %v", r)
		}
	}()
	data := map[string]any{
		"messages":              messages(msgs, mark),
		"bos_token":             t.bos,
		"eos_token":             t.eos,
		"add_generation_prompt": addGenerationPrompt,
	}
	if len(tools) > 0 {
		data["tools"] = toolList(tools, mark)
	}
	out, err = t.t.Render(data)
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err)
	}
	return out, nil
}

// messages is msgs as templates read them (Hugging Face's layout: a call's
// arguments as an object, its function under "function").
func messages(msgs []Message, mark func(string) string) []any {
	out := make([]any, len(msgs))
	for i, m := range msgs {
		v := map[string]any{"role": m.Role, "content": mark(m.Content)}
		if len(m.ToolCalls) > 0 {
			calls := make([]any, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				var args any = map[string]any{}
				if json.Unmarshal([]byte(c.Arguments), &args) != nil {
					args = c.Arguments
				}
				calls[j] = map[string]any{"id": mark(c.ID), "type": "function", "function": map[string]any{"name": mark(c.Name), "arguments": markTree(args, mark)}}
			}
			v["tool_calls"] = calls
		}
		if m.ToolCallID != "" {
			v["tool_call_id"] = mark(m.ToolCallID)
		}
		if m.Name != "" {
			v["name"] = mark(m.Name)
		}
		out[i] = v
	}
	return out
}

func toolList(tools []Tool, mark func(string) string) []any {
	out := make([]any, len(tools))
	for i, t := range tools {
		f := map[string]any{"name": mark(t.Name), "description": mark(t.Description)}
		if t.Parameters != nil {
			f["parameters"] = markTree(t.Parameters, mark)
		}
		out[i] = map[string]any{"type": "function", "function": f}
	}
	return out
}

// markTree is decoded JSON with every string in it, keys too, passed
// through mark (a copy; v is not changed). A map's keys are marked in
// sorted order: the renderer sorts keys, and marks made in order sort in
// that order, so the marked text lists them as the real one does.
func markTree(v any, mark func(string) string) any {
	switch v := v.(type) {
	case string:
		return mark(v)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = markTree(x, mark)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out[mark(k)] = markTree(v[k], mark)
		}
		return out
	}
	return v
}

package api

import (
	"encoding/json"
	"fmt"
	"strings"

	"stepthrough/engine/chat"
	"stepthrough/engine/chattemplate"
	"stepthrough/engine/tokenizer"
)

// Dialect is how a model writes a tool call in its output: the text that
// opens and closes it, and how the text between becomes a call.
type Dialect struct {
	Name        string
	Open, Close string
	parse       func(inner string) (chattemplate.ToolCall, error)
}

// The dialects this server reads.
var (
	// Lesson is the lesson model's: <calc>347+85</calc>, one tool, the
	// calculator, whose result the runtime writes as <result>432</result>.
	Lesson = &Dialect{Name: "lesson model (<calc>expression</calc>)", Open: chat.CalcOpen, Close: chat.CalcClose, parse: parseCalc}
	// Hermes is the format of Hermes, Qwen 2.5 and Qwen 3 templates:
	// <tool_call>{"name": ..., "arguments": {...}}</tool_call>.
	Hermes = &Dialect{Name: "Hermes (<tool_call>JSON</tool_call>)", Open: "<tool_call>", Close: "</tool_call>", parse: parseHermes}
)

// CalculatorTool is the one tool the lesson model knows, as the API
// offers it.
var CalculatorTool = chattemplate.Tool{Name: "calculator", Description: "Adds or subtracts two whole numbers.",
	Parameters: map[string]any{"type": "object", "properties": map[string]any{"expression": map[string]any{"type": "string", "description": "a+b or a-b"}}, "required": []any{"expression"}}}

func parseCalc(inner string) (chattemplate.ToolCall, error) {
	expr := strings.TrimSpace(inner)
	if expr == "" {
		return chattemplate.ToolCall{}, fmt.Errorf("an empty calculator call")
	}
	args, _ := json.Marshal(map[string]string{"expression": expr})
	return chattemplate.ToolCall{Name: CalculatorTool.Name, Arguments: string(args)}, nil
}

func parseHermes(inner string) (chattemplate.ToolCall, error) {
	var c struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(inner)), &c); err != nil || c.Name == "" {
		return chattemplate.ToolCall{}, fmt.Errorf("a tool call that is not {\"name\": ..., \"arguments\": ...}")
	}
	args := string(c.Arguments)
	if args == "" || args == "null" {
		args = "{}"
	}
	return chattemplate.ToolCall{Name: c.Name, Arguments: args}, nil
}

// Prompt is a request's prompt as the model reads it.
type Prompt struct {
	Text string // rendered: special-token markup is parsed when tokenized
	// Forced is text the runtime wrote at the start of the reply (a
	// required tool call's opening tag); it is part of Text.
	Forced  string
	AddBOS  bool     // the tokenizer adds BOS (the text does not start with it)
	Dialect *Dialect // nil: tool calls are not read from the output
	// Reasoning separates a reply's opening <think>…</think> (chat only:
	// a completion returns the text as written)
	Reasoning bool
	Template  string // what formatted it, for the viewer
}

// Build renders r's prompt for a model: its chat template (ChatML when it
// has none) or, for the lesson model in a conversation with its
// calculator, the format it was trained on. A completion's prompt is its
// text. Special-token markup is parsed in both, as llama-server does.
func Build(r *Request, tk *tokenizer.Tokenizer) (*Prompt, *Error) {
	v := tk.Vocab()
	p := &Prompt{AddBOS: v.AddBOS}
	bos := ""
	if v.BOS >= 0 {
		bos = tk.Piece(v.BOS)
	}
	if !r.Chat {
		p.Text, p.Template = r.Prompt, "none: a completion's prompt is its text"
		p.AddBOS = p.AddBOS && (bos == "" || !strings.HasPrefix(p.Text, bos))
		return p, nil
	}
	p.Reasoning = true
	tools := r.ToolChoice != "none"
	if isLesson(tk) && (tools || hasToolTurns(r.Messages)) {
		return lessonPrompt(r, p, tools)
	}
	eos := ""
	if v.EOS >= 0 {
		eos = tk.Piece(v.EOS)
	}
	t, err := chattemplate.New(v.ChatTemplate, bos, eos)
	if err != nil {
		return nil, &Error{Status: 500, Message: err.Error(), Type: "server_error"}
	}
	p.Template = "the model's chat template"
	if t.Default {
		p.Template = "ChatML (the model stores no chat template)"
	}
	var offered []chattemplate.Tool
	if tools {
		if !strings.Contains(t.Source, Hermes.Open) {
			return nil, invalid("tools", "this model's chat template writes no tool calls this server can read (it reads the lesson model's <calc> calls and Hermes-style <tool_call> JSON)")
		}
		p.Dialect, offered = Hermes, r.Tools
	}
	text, err := t.Render(r.Messages, offered, true)
	if err != nil {
		return nil, invalid("messages", "%v", err)
	}
	p.Text = text
	p.AddBOS = p.AddBOS && (bos == "" || !strings.HasPrefix(text, bos))
	if r.ToolChoice != "none" && r.ToolChoice != "auto" {
		p.Forced = Hermes.Open + "\n"
		p.Text += p.Forced
	}
	return p, nil
}

// isLesson reports whether the model is the lesson model (its stored
// template and its calculator tags).
func isLesson(tk *tokenizer.Tokenizer) bool {
	return tk.Vocab().ChatTemplate == chat.Template && len(tk.EncodeSpecial(chat.CalcClose, false)) == 1
}

func hasToolTurns(msgs []chattemplate.Message) bool {
	for _, m := range msgs {
		if m.Role == "tool" || len(m.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// lessonPrompt writes a conversation with the calculator in the lesson
// model's trained format: the system message "You can use the
// calculator." (added when the request has none), an assistant's call as
// <calc>expression</calc>, the tool's answer as <result>value</result>
// in the same turn, and the turn left open after a result (the model
// goes on from it).
func lessonPrompt(r *Request, p *Prompt, tools bool) (*Prompt, *Error) {
	if tools {
		for _, t := range r.Tools {
			if t.Name != CalculatorTool.Name {
				return nil, invalid("tools", "the lesson model knows one tool, calculator(expression); %q is not one it was trained to call", t.Name)
			}
		}
	}
	var b strings.Builder
	if tools && r.Messages[0].Role != "system" {
		b.WriteString(chat.System + chat.SystemCalculator + chat.End)
	}
	open := false // an assistant turn continues after a tool result
	for i, m := range r.Messages {
		switch {
		case m.Role == "tool":
			if !open {
				return nil, invalid(fmt.Sprintf("messages[%d]", i), "a tool message follows the assistant's call")
			}
			b.WriteString(chat.ResultOpen + m.Content + chat.ResultClose)
		case m.Role == "assistant":
			if !open {
				b.WriteString(chat.Assistant)
			}
			b.WriteString(m.Content)
			for _, c := range m.ToolCalls {
				var a struct {
					Expression string `json:"expression"`
				}
				if json.Unmarshal([]byte(c.Arguments), &a) != nil || a.Expression == "" {
					return nil, invalid(fmt.Sprintf("messages[%d].tool_calls", i), "a calculator call's arguments are {\"expression\": \"a+b\"}")
				}
				b.WriteString(chat.CalcOpen + a.Expression + chat.CalcClose)
			}
			open = len(m.ToolCalls) > 0
			if !open {
				b.WriteString(chat.End)
			}
		default:
			if open {
				return nil, invalid(fmt.Sprintf("messages[%d]", i), "the assistant's call is answered by a tool message first")
			}
			marker := map[string]string{"system": chat.System, "user": chat.User}[m.Role]
			b.WriteString(marker + m.Content + chat.End)
		}
	}
	if !open {
		b.WriteString(chat.Assistant)
	}
	p.Text, p.Dialect, p.Template = b.String(), Lesson, "the lesson model's conversation format, with its calculator"
	if !tools {
		p.Dialect = nil
	}
	if tools && r.ToolChoice != "auto" && !open {
		p.Forced = chat.CalcOpen
		p.Text += p.Forced
	}
	return p, nil
}

package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	Text string // rendered: the template's special-token markup is parsed when tokenized
	// Plain are the byte ranges of Text the messages supplied (sorted):
	// markers typed there stay text, as the OpenAI API reads a message.
	// A completion's prompt has none: its caller writes the template.
	Plain [][2]int
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
// text. A completion's special-token markup is parsed, as llama-server
// does; in a conversation only the template's is (Prompt.Plain).
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
	text, plain, err := t.RenderPlain(r.Messages, offered, true)
	if errors.Is(err, chattemplate.ErrNotLocated) {
		err = unlocated(r, tk)
	}
	if err != nil {
		return nil, invalid("messages", "%v", err)
	}
	p.Text, p.Plain = text, plain
	p.AddBOS = p.AddBOS && (bos == "" || !strings.HasPrefix(text, bos))
	if r.ToolChoice != "none" && r.ToolChoice != "auto" {
		p.Forced = Hermes.Open + "\n"
		p.Text += p.Forced
	}
	return p, nil
}

// Tokens tokenizes the prompt as the model reads it: special-token
// markup parsed except in the text the messages supplied.
func (p *Prompt) Tokens(tk *tokenizer.Tokenizer) []tokenizer.Token {
	return tk.EncodeTemplate(p.Text, p.AddBOS, p.Plain)
}

// unlocated answers a conversation whose text the template changes as it
// writes it, so that where it lies in the prompt is unknown: the prompt
// is tokenized as a whole then, which is safe only when no string the
// caller supplied holds a control token's text (nil); otherwise an error
// naming the first that does.
func unlocated(r *Request, tk *tokenizer.Tokenizer) error {
	for i, m := range r.Messages {
		texts := []string{m.Content, m.Name, m.ToolCallID}
		for _, c := range m.ToolCalls {
			texts = append(texts, c.ID, c.Name, c.Arguments)
		}
		if slices.ContainsFunc(texts, tk.HasControlText) {
			return fmt.Errorf("messages[%d] holds a special token's text, and this model's chat template changes the messages as it writes them, so that text could not be kept plain: remove it", i)
		}
	}
	for i, t := range r.Tools {
		schema, _ := json.Marshal(t.Parameters)
		if slices.ContainsFunc([]string{t.Name, t.Description, string(schema)}, tk.HasControlText) {
			return fmt.Errorf("tools[%d] holds a special token's text, and this model's chat template changes it as it writes it, so that text could not be kept plain: remove it", i)
		}
	}
	return nil
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
	var b plainText
	if tools && r.Messages[0].Role != "system" {
		b.template(chat.System + chat.SystemCalculator + chat.End)
	}
	open := false // an assistant turn continues after a tool result
	for i, m := range r.Messages {
		switch {
		case m.Role == "tool":
			if !open {
				return nil, invalid(fmt.Sprintf("messages[%d]", i), "a tool message follows the assistant's call")
			}
			b.template(chat.ResultOpen)
			b.plain(m.Content)
			b.template(chat.ResultClose)
		case m.Role == "assistant":
			if !open {
				b.template(chat.Assistant)
			}
			b.plain(m.Content)
			for _, c := range m.ToolCalls {
				var a struct {
					Expression string `json:"expression"`
				}
				if json.Unmarshal([]byte(c.Arguments), &a) != nil || a.Expression == "" {
					return nil, invalid(fmt.Sprintf("messages[%d].tool_calls", i), "a calculator call's arguments are {\"expression\": \"a+b\"}")
				}
				b.template(chat.CalcOpen)
				b.plain(a.Expression)
				b.template(chat.CalcClose)
			}
			open = len(m.ToolCalls) > 0
			if !open {
				b.template(chat.End)
			}
		default:
			if open {
				return nil, invalid(fmt.Sprintf("messages[%d]", i), "the assistant's call is answered by a tool message first")
			}
			marker := map[string]string{"system": chat.System, "user": chat.User}[m.Role]
			b.template(marker)
			b.plain(m.Content)
			b.template(chat.End)
		}
	}
	if !open {
		b.template(chat.Assistant)
	}
	p.Text, p.Plain, p.Dialect, p.Template = b.String(), b.ranges, Lesson, "the lesson model's conversation format, with its calculator"
	if !tools {
		p.Dialect = nil
	}
	if tools && r.ToolChoice != "auto" && !open {
		p.Forced = chat.CalcOpen
		p.Text += p.Forced
	}
	return p, nil
}

// plainText writes a prompt, keeping where the text the messages supplied
// lies (Prompt.Plain).
type plainText struct {
	strings.Builder
	ranges [][2]int
}

// template writes the format's own text, its markup to be parsed.
func (b *plainText) template(s string) { b.WriteString(s) }

// plain writes text a message supplied, to be read as plain text.
func (b *plainText) plain(s string) {
	if s == "" {
		return
	}
	start := b.Len()
	b.WriteString(s)
	b.ranges = append(b.ranges, [2]int{start, b.Len()})
}

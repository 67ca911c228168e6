// Package chat is the lesson model's conversation format: the role markers
// and end-of-turn token of its chat template, the calculator tool's call
// and result tags, the reasoning tags, and the runtime side of the tool:
// parsing a call and computing its result. The template is stored in the
// model file as tokenizer.chat_template (Jinja, as every GGUF chat model
// stores its own); Render produces exactly what that template does.
package chat

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Role markers, the end of a turn, and the document separator: control
// tokens of the lesson vocabulary (parsed only in text the application
// renders, never in a user's own text).
const (
	EndOfText = "<|endoftext|>"
	System    = "<|system|>"
	User      = "<|user|>"
	Assistant = "<|assistant|>"
	End       = "<|end|>"
)

// Tool and reasoning tags: user-defined tokens, written by the model (the
// call and its thinking) or by the runtime (the result).
const (
	CalcOpen    = "<calc>"
	CalcClose   = "</calc>"
	ResultOpen  = "<result>"
	ResultClose = "</result>"
	ThinkOpen   = "<think>"
	ThinkClose  = "</think>"
)

// Control are the control tokens in vocabulary order (the first is BOS and
// EOS); UserDefined the user-defined ones.
var (
	Control     = []string{EndOfText, System, User, Assistant, End}
	UserDefined = []string{CalcOpen, CalcClose, ResultOpen, ResultClose, ThinkOpen, ThinkClose}
)

// The system prompts the lesson model was trained to follow.
const (
	SystemCalculator = "You can use the calculator."
	SystemThink      = "Think step by step."
)

// Template is the Jinja chat template stored in the model file.
const Template = "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"

// Message is one turn.
type Message struct {
	Role    string `json:"role"` // system, user or assistant
	Content string `json:"content"`
}

// Roles the template knows.
var roles = map[string]string{"system": System, "user": User, "assistant": Assistant}

// Render formats messages as Template does; with generationPrompt it ends
// with the assistant's marker, where the model writes its reply.
func Render(msgs []Message, generationPrompt bool) (string, error) {
	var b strings.Builder
	for i, m := range msgs {
		marker, ok := roles[m.Role]
		if !ok {
			return "", fmt.Errorf("message %d: role %q is not system, user or assistant", i, m.Role)
		}
		b.WriteString(marker)
		b.WriteString(m.Content)
		b.WriteString(End)
	}
	if generationPrompt {
		b.WriteString(Assistant)
	}
	return b.String(), nil
}

// ErrCall is a malformed calculator call.
var ErrCall = errors.New("malformed calculator call")

// maxOperand bounds the calculator's operands (the lesson sums are below
// 1000; anything longer is not a call the model was taught).
const maxOperand = 1_000_000_000

// Calc evaluates a call's expression, "a+b" or "a-b" with non-negative
// integers, and returns the result as the runtime writes it.
func Calc(expr string) (string, error) {
	i := strings.IndexAny(expr, "+-")
	if i <= 0 {
		return "", fmt.Errorf("%w: %q has no + or - between two numbers", ErrCall, expr)
	}
	a, errA := operand(expr[:i])
	b, errB := operand(expr[i+1:])
	if errA != nil || errB != nil {
		return "", fmt.Errorf("%w: %q", ErrCall, expr)
	}
	if expr[i] == '-' {
		return strconv.Itoa(a - b), nil
	}
	return strconv.Itoa(a + b), nil
}

func operand(s string) (int, error) {
	if s == "" || len(s) > 10 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, ErrCall
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > maxOperand {
		return 0, ErrCall
	}
	return n, nil
}

// Result is what the runtime inserts after a call: the tagged result.
func Result(value string) string { return ResultOpen + value + ResultClose }

// callError is what the runtime writes back for a call it cannot compute.
const callError = "error: not a sum of two numbers"

// Execute is the runtime's side of the tool: when text ends with a call,
// it computes it and returns the call's expression and its value (or the
// error the model is shown); the runtime inserts Result(value).
func Execute(text string) (expr, value string, ok bool) {
	expr, ok = Call(text)
	if !ok {
		return "", "", false
	}
	value, err := Calc(expr)
	if err != nil {
		value = callError
	}
	return expr, value, true
}

// Call returns the expression of the last unanswered call in text (one
// that ends text with CalcClose), and whether there is one.
func Call(text string) (string, bool) {
	if !strings.HasSuffix(text, CalcClose) {
		return "", false
	}
	open := strings.LastIndex(text, CalcOpen)
	if open < 0 {
		return "", false
	}
	return text[open+len(CalcOpen) : len(text)-len(CalcClose)], true
}

package agent

import (
	"context"
	"testing"

	"stepthrough/engine"
	"stepthrough/engine/chat"
	"stepthrough/engine/model"
	"stepthrough/engine/reftest"
)

func session(t *testing.T, path string) *engine.Session {
	t.Helper()
	m, err := model.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	s, err := engine.NewSession(m, engine.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// On the lesson model a sum with the calculator is two passes: the call,
// then the answer from the result the runtime wrote.
func TestLoopRunsTheCalculator(t *testing.T) {
	s := session(t, "../../models/lesson.gguf")
	msgs := []chat.Message{{Role: "system", Content: chat.SystemCalculator}, {Role: "user", Content: "What is 347 + 85?"}}
	prompt, err := chat.Render(msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	tk := s.Model.Tokenizer
	passes, err := Loop(context.Background(), s, tk.EncodeSpecial(prompt, true), Options{MaxTokens: 40, MaxCalls: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(passes) != 2 || passes[0].Call != "347+85" || passes[0].Result != "432" || passes[1].Call != "" {
		t.Fatalf("passes %+v", passes)
	}
	if got := Text(tk, passes); got != "<calc>347+85</calc><result>432</result>347 + 85 = 432." {
		t.Errorf("text %q", got)
	}
	if last := passes[1].Output; last[len(last)-1] != tk.EOT() {
		t.Error("the second pass does not end the turn")
	}
}

// A model without the calculator's tokens is refused in one line.
func TestLoopRefusesAModelWithoutTheTool(t *testing.T) {
	s := session(t, reftest.Path(t, "models", "stories260K.gguf"))
	if _, err := Loop(context.Background(), s, []int32{1}, Options{MaxTokens: 4}); err == nil {
		t.Error("want an error")
	}
}

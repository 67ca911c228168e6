package session

import (
	"context"
	"testing"

	"stepthrough/engine/chat"
	"stepthrough/models/modelstest"
	"stepthrough/spec"
)

// A reset leaves nothing of the run: no calls, inserts or timings
// carried into the next one.
func TestResetLeavesNothing(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	se := New("tools", "", reg)
	defer se.Close()
	r := run(chat.System + chat.SystemCalculator + chat.End + chat.User + "What is 347 + 85?" + chat.End + chat.Assistant)
	r.Special, r.Tools, r.MaxTokens = true, "calc", 40
	r.Sampler.Temperature = 0
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := se.DecodeUntil(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if len(se.Calls) == 0 || len(se.decodeMS) == 0 {
		t.Fatalf("the run made %d calls in %d timed steps: nothing to reset", len(se.Calls), len(se.decodeMS))
	}
	if err := se.Act(ctx, "reset", func(string) (string, bool) { return "", false }); err != nil {
		t.Fatal(err)
	}
	if se.Calls != nil || se.Inserts != nil || se.decodeMS != nil || se.decodeTokens != 0 || se.Gen != nil || se.rec != nil {
		t.Errorf("after a reset: calls %q, inserts %v, %d decode timings, %d tokens, %d generated", se.Calls, se.Inserts, len(se.decodeMS), se.decodeTokens, len(se.Gen))
	}
}

// Without special=1 the chat markup is plain text; tools=calc on a model
// with no calculator token is refused in one line; a bad tools value is
// refused by the spec.
func TestToolsAndSpecialSettings(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	se := New("s", "", reg)
	defer se.Close()
	r := run(chat.User + "hi" + chat.End)
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	plain := len(se.Prompt)
	r.Special = true
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	hi := len(se.m.Tokenizer.EncodeIDs("hi", false))
	if special := len(se.Prompt); special >= plain || special != 3+hi {
		t.Errorf("special markup: %d tokens parsed, %d as text; want BOS, <|user|>, hi, <|end|>", special, plain)
	}
	if _, err := spec.FromForm(spec.QueryGetter(map[string][]string{"tools": {"shell"}}), r); err == nil {
		t.Error("tools=shell accepted")
	}
}

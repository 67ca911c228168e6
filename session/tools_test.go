package session

import (
	"context"
	"slices"
	"stepthrough/engine/trace"
	"strings"
	"testing"

	"stepthrough/engine/chat"
	"stepthrough/engine/spec"
)

// The calculator runs live in the Explorer: the model closes a call, the
// runtime computes it, and the next pass reads the result, shown as
// inserted (not sampled); the reply then uses it.
func TestCalculatorRunsLive(t *testing.T) {
	reg := testRegistry(t)
	ctx := context.Background()
	se := New("tools", "", reg)
	defer se.Close()
	r := run(chat.System + chat.SystemCalculator + chat.End + chat.User + "What is 347 + 85?" + chat.End + chat.Assistant)
	r.Special, r.Tools, r.MaxTokens = true, "calc", 40
	r.Sampler.Temperature = 0
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	for {
		more, err := se.decode(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
	}
	if !slices.Equal(se.calls, []string{"347+85"}) || len(se.inserts) != 1 {
		t.Fatalf("calls %q, inserts %v", se.calls, se.inserts)
	}
	var after int
	for i := range se.inserts {
		after = i + 1
	}
	if !strings.Contains(se.runtimeNote(after), "<result>432</result>") || se.runtimeNote(after-1) != "" {
		t.Errorf("runtime note at step %d: %q", after, se.runtimeNote(after))
	}
	last := se.cur.Steps[len(se.cur.Steps)-1]
	se.cur.Seek(len(se.cur.Steps)-1, len(trace.Stages(last))-1) // the last token shows once drawn
	e := se.Explorer()
	var text strings.Builder
	inserted := 0
	for _, g := range e.Generated {
		text.WriteString(g.Bytes)
		if g.Inserted {
			inserted++
		}
	}
	if !strings.HasSuffix(text.String(), "347 + 85 = 432."+chat.End) || inserted == 0 {
		t.Errorf("the Explorer shows %q with %d inserted tokens", text.String(), inserted)
	}
	// the result's pass reads several tokens at once
	if st := se.cur.Steps[after]; st.N < 2 {
		t.Errorf("the pass after the call reads %d tokens", st.N)
	}

	// A reset leaves nothing of the run: no calls, inserts or timings
	// carried into the next one.
	if err := se.Act(ctx, "reset", func(string) (string, bool) { return "", false }); err != nil {
		t.Fatal(err)
	}
	if se.calls != nil || se.inserts != nil || se.decodeMS != nil || se.decodeTokens != 0 || se.gen != nil || se.rec != nil {
		t.Errorf("after a reset: calls %q, inserts %v, %d decode timings, %d tokens, %d generated", se.calls, se.inserts, len(se.decodeMS), se.decodeTokens, len(se.gen))
	}
}

// Without special=1 the chat markup is plain text; tools=calc on a model
// with no calculator token is refused in one line; a bad tools value is
// refused by the spec.
func TestToolsAndSpecialSettings(t *testing.T) {
	reg := testRegistry(t)
	ctx := context.Background()
	se := New("s", "", reg)
	defer se.Close()
	r := run(chat.User + "hi" + chat.End)
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	plain := len(se.promptIDs)
	r.Special = true
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	hi := len(se.m.Tokenizer.EncodeIDs("hi", false))
	if special := len(se.promptIDs); special >= plain || special != 3+hi {
		t.Errorf("special markup: %d tokens parsed, %d as text; want BOS, <|user|>, hi, <|end|>", special, plain)
	}
	if _, err := spec.FromForm(spec.QueryGetter(map[string][]string{"tools": {"shell"}}), r); err == nil {
		t.Error("tools=shell accepted")
	}
}

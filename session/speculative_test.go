package session

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"stepthrough/engine/trace"
	"stepthrough/models/modelstest"
	"stepthrough/spec"
)

// generated runs r to the end and returns the generated token ids.
func generated(t *testing.T, se *Session, r spec.Run) []int32 {
	t.Helper()
	ctx := context.Background()
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := se.Act(ctx, "end", nil); err != nil {
		t.Fatal(err)
	}
	return se.Snapshot().Gen
}

// A greedy speculative run in the Explorer writes the target's own greedy
// tokens, whatever the draft; its rounds step through propose, the verify
// batch, verify, accept and rollback.
func TestSpeculativeExplorerGreedy(t *testing.T) {
	reg := modelstest.Lesson(t)
	se := New("s", "", reg)
	defer se.Close()
	r := run("Once upon a time, there was a girl named")
	r.Sampler.Temperature, r.MaxTokens = 0, 40
	want := generated(t, se, r)
	for _, d := range []struct {
		draft string
		k     int
	}{{"lesson-draft.gguf", 4}, {"lesson-draft.gguf", 1}, {"self:1", 3}, {"self:3", 16}} {
		r.Draft, r.DraftK = d.draft, d.k
		if got := generated(t, se, r); !slices.Equal(got, want) {
			t.Errorf("draft %s k %d: %v, plain greedy %v", d.draft, d.k, got, want)
		}
	}
	// the rounds' stages
	r.Draft, r.DraftK = "lesson-draft.gguf", 4
	if err := se.Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := se.Act(context.Background(), "next-token", nil); err != nil {
		t.Fatal(err)
	}
	st, _, _ := se.Current()
	var names []string
	for _, x := range trace.Stages(st) {
		if x.Layer <= 0 {
			names = append(names, string(x.Name))
		}
	}
	if w := []string{"propose", "embed", "attention", "mlp", "verify", "accept", "rollback"}; !slices.Equal(names, w) {
		t.Errorf("a round's stages (first layer): %v, want %v", names, w)
	}
	if st.N != 5 || st.Speculative == nil || len(st.Speculative.Proposed) != 4 {
		t.Fatalf("the verify pass fed %d positions for %+v", st.N, st.Speculative)
	}
}

// Refusals are one clear line and leave the session as it was.
func TestSpeculativeExplorerRefusals(t *testing.T) {
	se := New("s", "", modelstest.Lesson(t))
	defer se.Close()
	ctx := context.Background()
	if err := se.Run(ctx, run("Once upon a time")); err != nil {
		t.Fatal(err)
	}
	before := se.Spec()
	for _, tt := range []struct{ draft, tools, want string }{
		{"self:4", "", "choose 1 to 3"},
		{"self:x", "", "self:N"},
		{"nope.gguf", "", "no model named"},
		{"lesson-draft.gguf", "calc", "without tools"},
	} {
		r := run("Once upon a time")
		r.Draft, r.DraftK, r.Tools = tt.draft, 4, tt.tools
		err := se.Run(ctx, r)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("draft %s tools %q: %v, want one line with %q", tt.draft, tt.tools, err, tt.want)
		}
	}
	if !reflect.DeepEqual(se.Spec(), before) {
		t.Error("a refused run changed the session")
	}
}

package session

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"stepthrough/engine/spec"
	"stepthrough/engine/trace"
	"stepthrough/views"
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
	var ids []int32
	for _, g := range se.Explorer().Generated {
		ids = append(ids, g.ID)
	}
	return ids
}

// A greedy speculative run in the Explorer writes the target's own greedy
// tokens, whatever the draft; its rounds step through propose, the verify
// batch, verify, accept and rollback.
func TestSpeculativeExplorerGreedy(t *testing.T) {
	reg := testRegistry(t)
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

// A seeded sampling run replays exactly from its link, and each round's
// panel is consistent with the rule: kept proposals had u < p/q, the
// rejected one did not, and the tokens written are the kept proposals
// and the next token.
func TestSpeculativeExplorerSampling(t *testing.T) {
	reg := testRegistry(t)
	ctx := context.Background()
	a := New("a", "", reg)
	defer a.Close()
	r := run("Lily and Ben went to the")
	r.Sampler.Temperature, r.Sampler.Seed, r.Sampler.SeedSet, r.MaxTokens = 1, 7, true, 32
	r.Draft, r.DraftK = "lesson-draft.gguf", 3
	ids := generated(t, a, r)
	b := New("b", "", reg)
	defer b.Close()
	if got := generated(t, b, r); !slices.Equal(got, ids) {
		t.Fatalf("seeded replay: %v, then %v", ids, got)
	}
	// walk the rounds at their accept stage
	if err := a.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	var written []int32
	sawReject := false
	for {
		e := a.Explorer()
		if e.Step == 0 && len(written) == 0 && len(e.Generated) > 0 { // drawn at its sample stage
			written = append(written, e.Generated[0].ID)
		}
		if p, ok := e.Panel.(*views.SpeculativePanel); ok && p.Phase == "accept" {
			for i, pr := range p.Proposals {
				switch pr.Verdict {
				case "accepted":
					written = append(written, pr.Token.ID)
					if !(pr.U*pr.Q < pr.P) {
						t.Errorf("round %d guess %d kept with u %.4f, p/q %.4f", e.Step, i, pr.U, pr.Ratio())
					}
				case "rejected":
					sawReject = true
					if pr.U*pr.Q < pr.P {
						t.Errorf("round %d guess %d rejected with u %.4f < p/q %.4f", e.Step, i, pr.U, pr.Ratio())
					}
				}
			}
			written = append(written, p.Next.ID)
			if p.Accepted+1 != p.Emitted && len(written) < r.MaxTokens {
				t.Errorf("round %d: %d kept, %d emitted", e.Step, p.Accepted, p.Emitted)
			}
		}
		if e.End {
			break
		}
		if err := a.Act(ctx, "step", nil); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(written[:len(ids)], ids) {
		t.Errorf("the rounds' kept tokens %v, the run's %v", written, ids)
	}
	if !sawReject {
		t.Error("no round rejected a guess: the draft never disagreed in 32 tokens at temperature 1")
	}
	// the link reproduces the exact view
	s := a.Spec()
	c := New("c", "", reg)
	defer c.Close()
	if err := c.Open(ctx, s); err != nil {
		t.Fatal(err)
	}
	if ea, ec := a.Explorer(), c.Explorer(); ea.URL != ec.URL || !reflect.DeepEqual(ea.Generated, ec.Generated) {
		t.Errorf("reopened: %s\nwant %s", ec.URL, ea.URL)
	}
}

// Refusals are one clear line and leave the session as it was.
func TestSpeculativeExplorerRefusals(t *testing.T) {
	se := New("s", "", testRegistry(t))
	defer se.Close()
	ctx := context.Background()
	if err := se.Run(ctx, run("Once upon a time")); err != nil {
		t.Fatal(err)
	}
	before := se.Explorer().URL
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
	if se.Explorer().URL != before {
		t.Error("a refused run changed the session")
	}
}

package present

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"stepthrough/engine/chat"
	"stepthrough/engine/trace"
	"stepthrough/models/modelstest"
	"stepthrough/session"
	"stepthrough/spec"
	"stepthrough/views"
)

// Spec reproduces the exact view: a new session opened from it shows the
// same stage, the same generated tokens, the same link — and the seed it
// carries is the one drawn.
func TestSpecReproducesTheView(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	a := session.New("a", "", reg)
	defer a.Close()
	if err := a.Run(ctx, run("Lily saw a big")); err != nil {
		t.Fatal(err)
	}
	for _, act := range []string{"next-token", "next-token", "step", "step", "step"} {
		if err := a.Act(ctx, act, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Act(ctx, "view", func(k string) (string, bool) { v, ok := map[string]string{"head": "2"}[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	s := a.Spec()
	if !s.Sampler.SeedSet || s.View.Token != 2 || s.View.Stage != 3 || s.View.Head != 2 {
		t.Fatalf("spec %+v", s)
	}
	b := session.New("b", "", reg)
	defer b.Close()
	if err := b.Open(ctx, s); err != nil {
		t.Fatal(err)
	}
	ea, eb := Explorer(a), Explorer(b)
	if ea.URL != eb.URL || !reflect.DeepEqual(ea.Current, eb.Current) || !reflect.DeepEqual(ea.Generated, eb.Generated) || ea.Seed != eb.Seed {
		t.Errorf("reopened view differs:\n%+v\n%+v", ea, eb)
	}
	if !reflect.DeepEqual(b.Spec(), s) {
		t.Errorf("spec after reopening %+v, want %+v", b.Spec(), s)
	}
}

// Every stage kind has a registry entry, and every stage of a real trace
// builds a panel and a label.
func TestStageRegistry(t *testing.T) {
	for _, k := range trace.Kinds {
		found := false
		for _, s := range stages {
			found = found || s.kind == k
		}
		if !found {
			t.Errorf("stage kind %q has no registry entry", k)
		}
	}
	se := session.New("s", "", modelstest.Lesson(t))
	defer se.Close()
	plain, speculative := run("The capital of France is"), run("The capital of France is")
	speculative.Draft, speculative.DraftK = "lesson-draft.gguf", 4
	seen := map[string]bool{}
	for _, r := range []spec.Run{plain, speculative} {
		if err := se.Run(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		// a plain run's first token step, a speculative run's first two
		for {
			e := Explorer(se)
			if e.Panel == nil || e.Current.Label == "" {
				t.Errorf("stage %+v: no panel or label", e.Current)
			}
			seen[e.Current.Name] = true
			if e.Step > 0 && r.Draft == "" || e.Step > 1 || e.End {
				break
			}
			if err := se.Act(context.Background(), "step", nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, k := range trace.Kinds {
		if !seen[string(k)] {
			t.Errorf("no %s stage in a plain and a speculative run", k)
		}
	}
}

// The stage strip and the status line name each sampler step by the
// filter it ran, in the run's order, never "sampler 3".
func TestSamplerStagesNamedByFilter(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	se := session.New("strip", "", reg)
	defer se.Close()
	for _, order := range []string{"llama.cpp", "transformers"} {
		r := run("Lily saw a big")
		r.Sampler.Order = nil
		q, err := spec.FromQuery(map[string][]string{"order": {order}}, r)
		if err != nil {
			t.Fatal(err)
		}
		if err := se.Run(ctx, q); err != nil {
			t.Fatal(err)
		}
		e := Explorer(se)
		st, _, _ := se.Current()
		var got, want []string
		for _, x := range e.Stages {
			if x.Name == string(trace.StageSampler) {
				got = append(got, x.Label)
			}
		}
		for _, f := range st.Sampler {
			want = append(want, string(f.Step))
		}
		if len(want) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("%s order: strip %q, chain %q", order, got, want)
		}
	}
	if err := se.Act(ctx, "goto", func(k string) (string, bool) {
		v, ok := map[string]string{"stage": "sampler", "filter": "2"}[k]
		return v, ok
	}); err != nil {
		t.Fatal(err)
	}
	st, _, _ := se.Current()
	if w, want := Where(new(se.Snapshot())), "stage "+string(st.Sampler[1].Step); !strings.HasSuffix(w, want) {
		t.Errorf("status line %q, want it to end %q", w, want)
	}
}

// generated runs r to the end and returns the generated token ids.
func generated(t *testing.T, se *session.Session, r spec.Run) []int32 {
	t.Helper()
	ctx := context.Background()
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := se.Act(ctx, "end", nil); err != nil {
		t.Fatal(err)
	}
	var ids []int32
	for _, g := range Explorer(se).Generated {
		ids = append(ids, g.ID)
	}
	return ids
}

// A seeded sampling run replays exactly from its link, and each round's
// panel is consistent with the rule: kept proposals had u < p/q, the
// rejected one did not, and the tokens written are the kept proposals
// and the next token.
func TestSpeculativeExplorerSampling(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	a := session.New("a", "", reg)
	defer a.Close()
	r := run("Lily and Ben went to the")
	r.Sampler.Temperature, r.Sampler.Seed, r.Sampler.SeedSet, r.MaxTokens = 1, 7, true, 32
	r.Draft, r.DraftK = "lesson-draft.gguf", 3
	ids := generated(t, a, r)
	b := session.New("b", "", reg)
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
		e := Explorer(a)
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
	c := session.New("c", "", reg)
	defer c.Close()
	if err := c.Open(ctx, s); err != nil {
		t.Fatal(err)
	}
	if ea, ec := Explorer(a), Explorer(c); ea.URL != ec.URL || !reflect.DeepEqual(ea.Generated, ec.Generated) {
		t.Errorf("reopened: %s\nwant %s", ec.URL, ea.URL)
	}
}

// The calculator runs live in the Explorer: the model closes a call, the
// runtime computes it, and the next pass reads the result, shown as
// inserted (not sampled); the reply then uses it.
func TestCalculatorRunsLive(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	se := session.New("tools", "", reg)
	defer se.Close()
	r := run(chat.System + chat.SystemCalculator + chat.End + chat.User + "What is 347 + 85?" + chat.End + chat.Assistant)
	r.Special, r.Tools, r.MaxTokens = true, "calc", 40
	r.Sampler.Temperature = 0
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := se.Act(ctx, "end", nil); err != nil { // to the last stage: the last token shows once drawn
		t.Fatal(err)
	}
	sn := snapOf(se)
	if !slices.Equal(sn.Calls, []string{"347+85"}) || len(sn.Inserts) != 1 {
		t.Fatalf("calls %q, inserts %v", sn.Calls, sn.Inserts)
	}
	var after int
	for i := range sn.Inserts {
		after = i + 1
	}
	if !strings.Contains(sn.runtimeNote(after), "<result>432</result>") || sn.runtimeNote(after-1) != "" {
		t.Errorf("runtime note at step %d: %q", after, sn.runtimeNote(after))
	}
	e := Explorer(se)
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
	if st := sn.Cursor.Steps[after]; st.N < 2 {
		t.Errorf("the pass after the call reads %d tokens", st.N)
	}
}

// The registry's ranks put a plain step's stages in the order the trace
// records them, strictly: the model map lights what comes before by rank
// alone.
func TestStageRanksFollowThePipeline(t *testing.T) {
	se := session.New("rank", "", modelstest.Lesson(t))
	defer se.Close()
	if err := se.Run(context.Background(), run("The capital of France is")); err != nil {
		t.Fatal(err)
	}
	e := Explorer(se)
	if len(e.Stages) < 10 {
		t.Fatalf("%d stages", len(e.Stages))
	}
	for i := 1; i < len(e.Stages); i++ {
		if a, b := e.Stages[i-1], e.Stages[i]; a.Rank >= b.Rank {
			t.Errorf("%s (rank %d) comes before %s (rank %d)", a.Label, a.Rank, b.Label, b.Rank)
		}
	}
	for _, x := range e.Stages {
		if views.StageGloss(x) == "" {
			t.Errorf("stage %s has no glossary sentence (term %q)", x.Label, x.Term)
		}
	}
}

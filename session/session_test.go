package session

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"stepthrough/engine/registry"
	"stepthrough/engine/spec"
	"stepthrough/engine/trace"
	"stepthrough/lessons"
	"stepthrough/models"
)

func testRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	reg := registry.New(nil)
	reg.AddEmbedded("lesson.gguf", models.Lesson)
	reg.AddEmbedded("lesson-draft.gguf", models.LessonDraft)
	t.Cleanup(reg.Close)
	return reg
}

func run(prompt string) spec.Run {
	r := spec.Default("lesson.gguf")
	r.Prompt, r.Backend = prompt, "cpu"
	return r
}

// Spec reproduces the exact view: a new session opened from it shows the
// same stage, the same generated tokens, the same link — and the seed it
// carries is the one drawn.
func TestSpecReproducesTheView(t *testing.T) {
	reg := testRegistry(t)
	ctx := context.Background()
	a := New("a", "", reg)
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
	b := New("b", "", reg)
	defer b.Close()
	if err := b.Open(ctx, s); err != nil {
		t.Fatal(err)
	}
	ea, eb := a.Explorer(), b.Explorer()
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
	se := New("s", "", testRegistry(t))
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
			e := se.Explorer()
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

// Errors are typed, and a failed action leaves the session as it was.
func TestErrorsAreTypedAndHarmless(t *testing.T) {
	ctx := context.Background()
	se := New("e", "", testRegistry(t))
	defer se.Close()
	if err := se.Act(ctx, "step", nil); err != nil {
		t.Errorf("a step before any run: %v", err)
	}
	if err := se.Run(ctx, run("Once upon a time")); err != nil {
		t.Fatal(err)
	}
	before := se.Explorer()
	form := func(m map[string]string) spec.Getter {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	var se1 *spec.Error
	if err := se.Act(ctx, "run", form(map[string]string{"prompt": "x", "temperature": "NaN"})); !errors.As(err, &se1) || se1.Param != "temperature" {
		t.Errorf("bad temperature: %v", err)
	}
	var e *Error
	if err := se.Act(ctx, "run", form(map[string]string{"prompt": ""})); !errors.As(err, &e) {
		t.Errorf("empty prompt: %v", err)
	}
	if err := se.Act(ctx, "explode", nil); !errors.As(err, &e) {
		t.Errorf("unknown action: %v", err)
	}
	if err := se.Run(ctx, spec.Run{Version: 1, Prompt: "x", Model: "nope.gguf", Backend: "cpu", Sampler: run("").Sampler, MaxTokens: 4}); err == nil {
		t.Error("an unknown model: want error")
	}
	if after := se.Explorer(); after.URL != before.URL || !reflect.DeepEqual(after.Generated, before.Generated) {
		t.Errorf("failed actions changed the session: %s → %s", before.URL, after.URL)
	}
}

// A lesson step opens at its stage, layer and head.
func TestPlayLesson(t *testing.T) {
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	se := New("l", "", testRegistry(t))
	defer se.Close()
	for name, l := range all {
		for i, st := range l.Steps {
			if err := se.PlayLesson(context.Background(), l, i); err != nil {
				t.Fatalf("%s step %d: %v", name, i+1, err)
			}
			e := se.Explorer()
			if e.Current.Name != st.Stage || (st.Layer > 0 && e.Current.Layer != st.Layer-1) || e.Step != st.Token {
				t.Errorf("%s step %d: at %+v (token step %d), want %s layer %d token %d", name, i+1, e.Current, e.Step, st.Stage, st.Layer, st.Token)
			}
		}
	}
}

// A pool closes a session no connection holds after DetachedTimeout, one
// that is held only after IdleTimeout; an expired session answers so and
// starts no engine.
func TestPoolEviction(t *testing.T) {
	p := NewPool(testRegistry(t), PoolConfig{IdleTimeout: time.Hour, DetachedTimeout: time.Minute})
	held, _ := p.New("a")
	loose, _ := p.New("a")
	detach := held.Attach()
	p.Evict(time.Now().Add(2 * time.Minute))
	if p.Get(held.ID()) == nil || p.Get(loose.ID()) != nil {
		t.Errorf("after 2 min: held kept %v, loose kept %v", p.Get(held.ID()) != nil, p.Get(loose.ID()) != nil)
	}
	if err := loose.Run(context.Background(), run("hi")); !errors.Is(err, ErrExpired) {
		t.Errorf("an expired session ran: %v", err)
	}
	detach()
	p.Evict(time.Now().Add(2 * time.Minute))
	if p.Len() != 0 {
		t.Error("a session its connection left is not closed")
	}
}

// A model named NAME@TYPE is that model converted in memory: it runs, and
// a bad type or a missing model is one line.
func TestConvertedModelNames(t *testing.T) {
	reg := testRegistry(t)
	se := New("q", "", reg)
	defer se.Close()
	r := run("The capital of France is")
	r.Model, r.Sampler.Temperature = "lesson.gguf@Q8_0", 0
	if err := se.Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"lesson.gguf@Q3_K", "nope.gguf@Q8_0"} {
		r.Model = bad
		if err := se.Run(context.Background(), r); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// The stage strip and the status line name each sampler step by the
// filter it ran, in the run's order, never "sampler 3".
func TestSamplerStagesNamedByFilter(t *testing.T) {
	reg := testRegistry(t)
	ctx := context.Background()
	se := New("strip", "", reg)
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
		e := se.Explorer()
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
	if w, want := se.Where(), "stage "+string(st.Sampler[1].Step); !strings.HasSuffix(w, want) {
		t.Errorf("status line %q, want it to end %q", w, want)
	}
}

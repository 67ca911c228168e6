package session

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"stepthrough/lessons"
	"stepthrough/models/modelstest"
	"stepthrough/spec"
)

func run(prompt string) spec.Run {
	r := spec.Default("lesson.gguf")
	r.Prompt, r.Backend = prompt, "cpu"
	return r
}

// Errors are typed, and a failed action leaves the session as it was.
func TestErrorsAreTypedAndHarmless(t *testing.T) {
	ctx := context.Background()
	se := New("e", "", modelstest.Lesson(t))
	defer se.Close()
	if err := se.Act(ctx, "step", nil); err != nil {
		t.Errorf("a step before any run: %v", err)
	}
	if err := se.Run(ctx, run("Once upon a time")); err != nil {
		t.Fatal(err)
	}
	before := se.Snapshot()
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
	if after := se.Snapshot(); !reflect.DeepEqual(after.Spec, before.Spec) || !slices.Equal(after.Gen, before.Gen) {
		t.Errorf("failed actions changed the session: %+v → %+v", before.Spec, after.Spec)
	}
}

// A lesson step opens at its stage, layer and head.
func TestPlayLesson(t *testing.T) {
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	se := New("l", "", modelstest.Lesson(t))
	defer se.Close()
	for name, l := range all {
		for i, st := range l.Steps {
			if err := se.PlayLesson(context.Background(), l, i); err != nil {
				t.Fatalf("%s step %d: %v", name, i+1, err)
			}
			sn := se.Snapshot()
			step, _ := sn.Cursor.Position()
			_, at := sn.Cursor.Current()
			if string(at.Name) != st.Stage || (st.Layer > 0 && at.Layer != st.Layer-1) || step != st.Token {
				t.Errorf("%s step %d: at %+v (token step %d), want %s layer %d token %d", name, i+1, at, step, st.Stage, st.Layer, st.Token)
			}
		}
	}
}

// A pool closes a session no connection holds after DetachedTimeout, one
// that is held only after IdleTimeout; an expired session answers so and
// starts no engine.
func TestPoolEviction(t *testing.T) {
	p := NewPool(modelstest.Lesson(t), PoolConfig{IdleTimeout: time.Hour, DetachedTimeout: time.Minute})
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
	reg := modelstest.Lesson(t)
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

// Work outside a session's run holds part of the memory budget until it
// ends: more than is left is ErrBusy, more than the whole budget says so,
// and a release, even twice, gives back exactly what was held.
func TestPoolHold(t *testing.T) {
	p := NewPool(nil, PoolConfig{MemoryBudget: 3 << 20})
	release, err := p.Hold(2<<20, "this work", "its caches", "ask for less")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bytes int64
		want  string
	}{
		{2 << 20, ErrBusy.Error()},
		{4 << 20, "this work would hold about 4 MiB (its caches), more than the 3 MiB all runs on this server may hold (--memory-budget): ask for less"},
		{3<<20 + 1<<19, "about 3.5 MiB"},
	} {
		if _, err := p.Hold(tc.bytes, "this work", "its caches", "ask for less"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("holding %d more: %v, want %q", tc.bytes, err, tc.want)
		}
	}
	release()
	release()
	if r := p.Reserved(); r != 0 {
		t.Errorf("%d bytes reserved after the release", r)
	}
	if _, err := p.Hold(3<<20, "this work", "its caches", "ask for less"); err != nil {
		t.Errorf("the whole budget once released: %v", err)
	}
}

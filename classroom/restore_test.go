package classroom

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"stepthrough/lessons"
	"stepthrough/models/modelstest"
)

// renderFails is a beforeRender hook: the view of lesson step bad cannot
// be drawn (as when a view indexed an empty result).
func renderFails(bad int) func(State) {
	return func(s State) {
		if s.LessonStep == bad {
			panic("index out of range [0] with length 0")
		}
	}
}

// goTo moves the room to lesson step i as the instructor's action does:
// change, save, then send.
func goTo(t *testing.T, r *Room, i int) {
	t.Helper()
	msg, err := ParseMessage([]byte(`{"action":"lesson-step","to":"`+strconv.Itoa(i)+`"}`), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.do(t.Context(), func() {
		if err := r.change(t.Context(), msg); err != nil {
			t.Error(err)
			return
		}
		if r.persist(t.Context()) {
			r.broadcast()
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// roomState reads what the room holds and shows.
func roomState(t *testing.T, r *Room) (step int, shown string, broken string) {
	t.Helper()
	r.do(t.Context(), func() {
		step, broken = r.state.LessonStep, r.state.Broken
		shown = string(r.shown)
	})
	return step, shown, broken
}

// A change whose view cannot be drawn never crashes the server and is
// never drawn again: the room goes back to its last good state, saves it
// (so a restart loads that one), and goes on; a room that loads a state no
// view can draw is quarantined; and when even the good state cannot be
// drawn the room shows why, with nothing from its session.
func TestRoomRestoresAfterAViewThatCannotBeDrawn(t *testing.T) {
	reg := modelstest.Lesson(t)
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st, err := OpenBolt(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Engines: reg, Lessons: all, Store: st, beforeRender: renderFails(2)}
	cl := New(cfg)
	t.Cleanup(cl.Close)
	r, _, err := cl.Create(t.Context(), "x", "logits-and-softmax", nil)
	if err != nil {
		t.Fatal(err)
	}
	goTo(t, r, 1)
	goTo(t, r, 2) // cannot be drawn
	step, shown, _ := roomState(t, r)
	saved, err := st.LoadRoom(t.Context(), r.Code())
	if err != nil {
		t.Fatal(err)
	}
	if step != 1 || saved.State.LessonStep != 1 || !strings.Contains(shown, `data-lesson-step="1"`) {
		t.Errorf("after a step that cannot be drawn: the room is at %d, the store at %d, the view %.200s; want all back at 1", step, saved.State.LessonStep, shown)
	}
	if n := cl.Stats().Restored; n != 1 {
		t.Errorf("%d restores, want 1", n)
	}
	goTo(t, r, 0) // the room goes on
	if step, _, _ := roomState(t, r); step != 0 {
		t.Errorf("the next step: the room is at %d, want 0", step)
	}

	// a panic in the change itself (not the render) restores the same way
	r.do(t.Context(), func() { r.state.LessonStep = 2; panic("a change that fails half-way") })
	if step, _, _ := roomState(t, r); step != 0 {
		t.Errorf("after a change that panicked: the room is at %d, want 0", step)
	}

	// a stored state no view can draw (saved by a server before a fix)
	// loads quarantined: told, saved, not replayed
	cl.Close()
	if st, err = OpenBolt(dir, nil); err != nil {
		t.Fatal(err)
	}
	cfg.Store = st
	saved, _ = st.LoadRoom(t.Context(), r.Code())
	saved.State.LessonStep = 2
	if _, err := st.SaveRoom(t.Context(), Record{Code: r.Code(), SecretHash: saved.SecretHash, Created: saved.Created, Expires: saved.Expires, Version: saved.Version}, saved.State); err != nil {
		t.Fatal(err)
	}
	cl2 := New(cfg)
	t.Cleanup(cl2.Close)
	r2, err := cl2.Lookup(t.Context(), r.Code())
	if err != nil {
		t.Fatalf("a stored state that cannot be drawn: %v", err)
	}
	_, _, broken := roomState(t, r2)
	saved, _ = st.LoadRoom(t.Context(), r.Code())
	if !strings.Contains(broken, "could not be shown") || saved.State.Broken != broken {
		t.Errorf("quarantine on load: %q, saved %q", broken, saved.State.Broken)
	}

	// nothing can be drawn: the room says why and waits
	cfg.beforeRender = func(State) { panic("nothing draws") }
	cl3 := New(cfg)
	t.Cleanup(cl3.Close)
	r3, _, err := cl3.Create(t.Context(), "y", "tokens", nil)
	if err == nil {
		if _, shown, _ := roomState(t, r3); !strings.Contains(shown, "nothing draws") {
			t.Errorf("a room that cannot draw anything shows %.300s", shown)
		}
	} else if !strings.Contains(err.Error(), "nothing draws") {
		t.Errorf("a room whose first view cannot be drawn: %v", err)
	}
}

// A state written by another server that this one cannot draw arrives by
// catch-up (the bus event, or the periodic read): this server restores its
// last good state instead of dying, as it does for its own changes.
func TestCatchUpWithAViewThatCannotBeDrawn(t *testing.T) {
	reg := modelstest.Lesson(t)
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	st, err := OpenBolt(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cl := New(Config{Engines: reg, Lessons: all, Store: st, beforeRender: renderFails(2)})
	t.Cleanup(cl.Close)
	r, _, err := cl.Create(t.Context(), "x", "logits-and-softmax", nil)
	if err != nil {
		t.Fatal(err)
	}
	goTo(t, r, 1)
	saved, err := st.LoadRoom(t.Context(), r.Code())
	if err != nil {
		t.Fatal(err)
	}
	saved.State.LessonStep = 2 // another server's change
	if _, err := st.SaveRoom(t.Context(), Record{Code: r.Code(), SecretHash: saved.SecretHash, Created: saved.Created, Expires: saved.Expires, Version: saved.Version}, saved.State); err != nil {
		t.Fatal(err)
	}
	cl.Receive(Event{Room: r.Code(), Kind: EventState, Version: saved.Version + 1, From: "another"})
	var step int
	var restored int64
	deadline := time.Now().Add(5 * time.Second)
	for restored == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		r.do(t.Context(), func() { step = r.state.LessonStep })
		restored = cl.Stats().Restored
	}
	if restored != 1 || step != 1 {
		t.Errorf("after catching up with a state it cannot draw: %d restores, the room at step %d; want 1 and step 1", restored, step)
	}
}

package classroom

import (
	"runtime"
	"testing"
	"time"

	"stepthrough/lessons"
	"stepthrough/models/modelstest"
)

// Two classrooms on one store, as two servers: the room starts on one and
// is loaded by the other, which follows it by the events it is given.
func followingPair(t *testing.T) (one, two *Room) {
	t.Helper()
	st, err := OpenBolt(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := modelstest.Lesson(t)
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var cls [2]*Classroom
	for i, id := range []string{"one", "two"} {
		cls[i] = New(Config{Engines: reg, Lessons: all, Store: st, ServerID: id})
		t.Cleanup(cls[i].Close)
	}
	one, _, err = cls[0].Create(t.Context(), "x", "tokens", nil)
	if err != nil {
		t.Fatal(err)
	}
	if two, err = cls[1].Lookup(t.Context(), one.Code()); err != nil {
		t.Fatal(err)
	}
	return one, two
}

// onRoom runs f on r's goroutine and waits for it.
func onRoom(t *testing.T, r *Room, f func()) {
	t.Helper()
	if err := r.do(t.Context(), f); err != nil {
		t.Fatal(err)
	}
}

// stepAndSave moves the room to lesson step i and writes it, as its
// instructor's server does, and returns the stored version.
func stepAndSave(t *testing.T, r *Room, i int) int64 {
	t.Helper()
	var v int64
	onRoom(t, r, func() {
		if err := r.gotoLessonStep(r.engineCtx(), i); err != nil {
			t.Error(err)
		}
		if err := r.save(r.engineCtx()); err != nil {
			t.Error(err)
		}
		v = r.stored
	})
	return v
}

func storedOf(t *testing.T, r *Room) (v int64) {
	onRoom(t, r, func() { v = r.stored })
	return v
}

// waitStored polls until r holds version v (10 s at most).
func waitStored(t *testing.T, r *Room, v int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); storedOf(t, r) != v; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the room holds version %d, want %d", storedOf(t, r), v)
		}
	}
}

// Forged events for a live room (10,000 state events with ever newer
// versions, 1,000 answer events) start no goroutine each and cost a few
// store reads, not one each: the first catch-up finds the store behind the
// announced version and the room stops believing the bus until it reads
// the store's versions. Nothing changes on its screens. Real changes still
// arrive: by that read while the bus is doubted, then by the bus again.
func TestForgedEventsCoalesce(t *testing.T) {
	one, two := followingPair(t)
	cl := two.cl
	v0 := storedOf(t, two)
	before := cl.Stats()
	base := runtime.NumGoroutine()
	peak := base
	for i := range int64(10_000) {
		cl.Receive(Event{Room: two.code, Kind: EventState, Version: v0 + 1 + i, From: "forger"})
		if i%10 == 0 {
			cl.Receive(Event{Room: two.code, Kind: EventAnswer, From: "forger"})
		}
		if i%500 == 0 {
			peak = max(peak, runtime.NumGoroutine())
		}
	}
	peak = max(peak, runtime.NumGoroutine())
	for deadline := time.Now().Add(10 * time.Second); two.answersDue.Load() || two.catching.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the catch-ups the flood queued never ran")
		}
	}
	onRoom(t, two, func() {}) // the last of them has finished
	after := cl.Stats()
	t.Logf("11,000 forged events: goroutines %d before, %d at most during; %d store reads; the bus doubted %d time(s)",
		base, peak, after.Reloads-before.Reloads, after.BusDoubts-before.BusDoubts)
	if peak >= base+100 {
		t.Errorf("goroutines rose from %d to %d during the flood", base, peak)
	}
	if n := after.Reloads - before.Reloads; n > 4 {
		t.Errorf("11,000 forged events cost %d store reads, want a few", n)
	}
	if after.BusDoubts == before.BusDoubts {
		t.Error("a version the store does not hold was believed")
	}
	if after.Broadcasts != before.Broadcasts || storedOf(t, two) != v0 {
		t.Errorf("the flood changed the room: %d broadcasts, version %d (was %d)", after.Broadcasts-before.Broadcasts, storedOf(t, two), v0)
	}

	// while the bus is doubted, a real change is found by the next read of
	// the store's versions
	v1 := stepAndSave(t, one, 1)
	cl.Receive(Event{Room: two.code, Kind: EventState, Version: v1, From: "one"})
	onRoom(t, two, func() {})
	if got := storedOf(t, two); got != v0 {
		t.Errorf("a doubted bus was believed: the room holds %d", got)
	}
	cl.checkMarks(t.Context())
	waitStored(t, two, v1)

	// then the bus is believed again, and an event costs nothing once the
	// room holds its version
	v2 := stepAndSave(t, one, 2)
	cl.Receive(Event{Room: two.code, Kind: EventState, Version: v2, From: "one"})
	waitStored(t, two, v2)
	reads := cl.Stats().Reloads
	for range 1000 {
		cl.Receive(Event{Room: two.code, Kind: EventState, Version: v2, From: "forger"})
	}
	onRoom(t, two, func() {})
	if n := cl.Stats().Reloads - reads; n != 0 {
		t.Errorf("1,000 events for the version the room holds cost %d store reads", n)
	}
}

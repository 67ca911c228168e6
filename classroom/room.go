package classroom

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"stepthrough/lessons"
	"stepthrough/session"
	"stepthrough/spec"
	"stepthrough/wsconn"
)

// Room is one classroom. One goroutine owns its state — the instructor's
// engine session, the saved state, the answers, the connected clients —
// and runs every change to it in turn (Room.do); engine runs happen there,
// holding no lock, so one room's work never blocks another room or the
// classroom's lookups.
type Room struct {
	cl   *Classroom
	code string

	// set before ready is closed, then read-only
	secretHash string
	created    time.Time
	creator    string // the client address that started it; set under the classroom's lock, before the room is in its map (a loaded room's stays in the store)
	lesson     *lessons.Lesson
	err        error // the room could not start or load
	ready      chan struct{}

	inbox chan func()
	quit  chan struct{} // closed when the room's goroutine has ended

	// read without the goroutine (lookups, the sweep)
	expires    atomic.Int64 // unix nanoseconds
	lastActive atomic.Int64
	nclients   atomic.Int32
	dirty      atomic.Bool // writes the store refused wait in memory: not unloaded while set
	// What the bus said (Receive reads them, so that a burst of events
	// costs a lookup each and at most one catch-up at a time; follow.go).
	heard      atomic.Int64 // the newest state version held here or announced: an event at or below it costs nothing
	doubted    atomic.Bool  // the bus announced a version the store did not hold: its state events wait for the next read of the store's versions
	catching   atomic.Bool  // a catch-up for a state event is queued
	answersDue atomic.Bool  // a reload of answers saved elsewhere is scheduled

	// owned by the room's goroutine
	state      State
	se         *session.Session
	answers    map[int]map[string]string // lesson step → student → answer
	clients    map[*client]bool
	follow     *websocket.PreparedMessage // #room-main and #room-status: every follower gets these bytes
	shown      []byte                     // follow's bytes (what the followers were last sent)
	status     *websocket.PreparedMessage // #room-status alone, for students exploring
	broadcasts int                        // sends of the room's view so far (the view shows it)
	good       State                      // the last state whose view rendered: where a failed render returns
	hasGood    bool
	restoring  bool                       // a failed render is being undone: a second failure shows the room as broken
	due        bool                       // an instructor refresh is scheduled
	joins      []time.Time                // student connections in the last minute
	closed     bool                       // ended or unloaded: the goroutine stops after this change
	unsaved    unsaved                    // writes the store refused, retried
	damage     string                     // what was wrong with the stored state, told to the instructor
	voters     map[string]map[string]bool // address → the student ids that answered from it
	refused    int                        // answers refused by the per-address limit
	stored     int64                      // the state's version in the store (0: not saved yet, or unknown after a conflict; hold sets it)
}

// client is one connected tab.
type client struct {
	conn       *wsconn.Conn
	addr       string // the client's address (branches count against its limits)
	student    string // empty for the instructor and the projector
	instructor bool
	projector  bool                            // the projector view: follows, never acts, not counted
	exploring  atomic.Pointer[session.Session] // the student's own branch; nil while following
}

// Code is the room's join code.
func (r *Room) Code() string { return r.code }

func (cl *Classroom) newRoom(code string) *Room {
	r := &Room{cl: cl, code: code, ready: make(chan struct{}), inbox: make(chan func(), 64), quit: make(chan struct{}),
		answers: map[int]map[string]string{}, clients: map[*client]bool{}}
	r.touch()
	return r
}

func (r *Room) touch()                { r.lastActive.Store(time.Now().UnixNano()) }
func (r *Room) expiry() time.Time     { return time.Unix(0, r.expires.Load()) }
func (r *Room) setExpiry(t time.Time) { r.expires.Store(t.UnixNano()) }
func (r *Room) idleSince() time.Time  { return time.Unix(0, r.lastActive.Load()) }
func (r *Room) ended() bool           { return isClosed(r.quit) }
func (r *Room) isReady() bool         { return isClosed(r.ready) }
func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
func (r *Room) engineCtx() context.Context { return context.Background() }

// run is the room's goroutine: start (create or load), then every change
// in turn until the room closes.
func (r *Room) run(start func(context.Context) error) {
	defer close(r.quit)
	r.err = r.safely("starting", start)
	close(r.ready)
	if r.err != nil {
		if r.se != nil {
			r.se.Close()
		}
		return
	}
	for !r.closed {
		r.apply(<-r.inbox)
	}
}

// safely runs a room's start (create or load), turning a panic into an
// error: the room does not start, and the server goes on.
func (r *Room) safely(what string, start func(context.Context) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			r.cl.log.Error("panic "+what+" a room", "room", r.code, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("the room could not start: %v", p)
		}
	}()
	return start(r.engineCtx())
}

// apply runs one change; a panic is logged with its stack and the room
// goes back to its last good state (restore), so the room stays usable.
func (r *Room) apply(f func()) {
	defer func() {
		if p := recover(); p != nil {
			r.cl.log.Error("panic in a room", "room", r.code, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			r.restore(fmt.Errorf("%v", p))
		}
	}()
	f()
}

// restore puts the room back to the last state whose view rendered after
// a change that failed (why): that state is replayed, rendered, saved (so
// a restart does not load the failed one) and sent, and the instructors
// are told. The failed state is never rendered again here. Should the
// good state fail too, or restore itself panic, the room shows why and
// waits for the instructor, with nothing from its session.
func (r *Room) restore(why error) {
	msg := fmt.Sprintf("The room could not show its last change (%v), so it went back to the last state it could show.", why)
	defer func() {
		if p := recover(); p != nil {
			r.cl.log.Error("panic restoring a room", "room", r.code, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			r.state.Broken = msg + " That state could not be shown either: choose a lesson step or run a new prompt."
			r.renderBroken(r.state.Broken)
			r.sendFollow()
		}
		r.restoring = false
	}()
	r.cl.counts.restored.Add(1)
	if r.restoring || !r.hasGood {
		panic("no good state to go back to")
	}
	r.restoring = true
	r.state = r.good.clone()
	r.rebuild(r.engineCtx())
	if err := r.render(); err != nil {
		panic(err)
	}
	r.persist(r.engineCtx())
	r.send()
	r.noteInstructors(msg)
}

// sendFollow sends the followers' bytes to every client.
func (r *Room) sendFollow() {
	for c := range r.clients {
		c.conn.Send(r.follow)
	}
}

// noteInstructors shows msg on every instructor page here.
func (r *Room) noteInstructors(msg string) {
	for c := range r.clients {
		if c.instructor {
			c.conn.Note(msg)
		}
	}
}

// do runs f on the room's goroutine and waits for it. When ctx ends
// before f has started, f never runs and do returns ctx's error.
func (r *Room) do(ctx context.Context, f func()) error {
	select {
	case <-r.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.err != nil {
		return ErrRoomGone
	}
	const pending, running, cancelled = 0, 1, 2
	var state atomic.Int32
	done := make(chan struct{})
	job := func() {
		if !state.CompareAndSwap(pending, running) {
			return
		}
		defer close(done)
		f()
	}
	select {
	case r.inbox <- job:
	case <-r.quit:
		return ErrRoomGone
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		if state.CompareAndSwap(pending, cancelled) {
			return ctx.Err()
		}
		<-done // already running: wait for it
		return nil
	case <-r.quit:
		if state.CompareAndSwap(pending, cancelled) {
			return ErrRoomGone
		}
		<-done
		return nil
	}
}

// post runs f on the room's goroutine later, without waiting.
func (r *Room) post(f func()) {
	go r.do(context.Background(), f)
}

// create starts a room from a lesson or from an Explorer link's values.
func (r *Room) create(ctx context.Context, lessonName string, explorer url.Values) error {
	r.se = session.New("room-"+r.code, "", r.cl.cfg.Engines)
	if lessonName != "" {
		l, ok := r.cl.cfg.Lessons[lessonName]
		if !ok {
			return fmt.Errorf("no lesson %q", truncate(lessonName, 40))
		}
		r.lesson, r.state.Lesson = l, lessonName
		r.gotoLessonStep(ctx, 0)
	} else {
		run, err := spec.FromQuery(explorer, spec.Default(r.cl.cfg.Engines.Default()))
		if err != nil {
			return err
		}
		if run.Prompt == "" {
			run.Prompt = "Once upon a time"
		}
		if err := r.se.Open(ctx, run); err != nil {
			return err
		}
		r.capture()
	}
	if err := r.render(); err != nil { // drawn before it is saved: a room no view can draw is never stored
		return fmt.Errorf("the room's first view could not be drawn: %w", err)
	}
	if err := r.save(ctx); err != nil {
		r.cl.counts.storeErrors.Add(1)
		r.cl.log.Error("saving a new room", "room", r.code, "err", err)
		return ErrStore
	}
	return r.render() // again, with its stored version
}

// load restores a stored room: the same run and seed replay the same
// trace, then the view is put back.
func (r *Room) load(ctx context.Context) error {
	sr, err := r.cl.store.LoadRoom(ctx, r.code)
	if errors.Is(err, ErrNoRoom) {
		return ErrRoomGone
	}
	if err != nil {
		r.cl.counts.storeErrors.Add(1)
		r.cl.log.Error("loading a room", "room", r.code, "err", err)
		return ErrRoomGone
	}
	if time.Now().After(sr.Expires) {
		return ErrRoomGone
	}
	r.secretHash, r.created, r.state, r.answers = sr.SecretHash, sr.Created, sr.State, sr.Answers
	r.hold(sr.Version)
	r.setExpiry(sr.Expires)
	damage := sr.Damage
	if r.state.Lesson != "" {
		if r.lesson = r.cl.cfg.Lessons[r.state.Lesson]; r.lesson == nil {
			r.cl.log.Error("a stored room names a lesson this server lacks", "room", r.code, "lesson", r.state.Lesson)
			return ErrRoomGone
		}
		if n := len(r.lesson.Steps); r.state.LessonStep >= n {
			damage = append(damage, fmt.Sprintf("its lesson step %d is past the lesson's last (%d)", r.state.LessonStep+1, n))
			r.state.LessonStep = n - 1
		}
	}
	if len(damage) > 0 {
		r.damage = "This room's saved state was damaged: " + strings.Join(damage, "; ") +
			". The room was restored from what could be read (its answers are kept): check the lesson step and the run before going on."
		r.cl.log.Error("a stored room's state is damaged", "room", r.code, "damage", strings.Join(damage, "; "))
	}
	if r.state.Revealed == nil {
		r.state.Revealed = map[int]bool{}
	}
	r.se = session.New("room-"+r.code, "", r.cl.cfg.Engines)
	if r.state.Broken == "" {
		r.rebuild(ctx)
	}
	if err := r.render(); err != nil { // a stored state no view can draw: quarantined, as one that does not replay
		r.state.Broken = fmt.Sprintf("the room's saved state could not be shown (%v): choose a lesson step or run a new prompt", err)
		r.se.Close()
		r.se = session.New("room-"+r.code, "", r.cl.cfg.Engines) // not replayed, as a state that did not replay
		if err := r.render(); err != nil {
			r.renderBroken(r.state.Broken)
		}
		r.persist(ctx)
	}
	r.cl.log.Info("room resumed from the store", "room", r.code, "lesson_step", r.state.LessonStep, "answers", len(r.answers))
	return nil
}

// rebuild replays the saved state in a fresh engine session.
func (r *Room) rebuild(ctx context.Context) {
	if r.se != nil {
		r.se.Close()
	}
	r.se = session.New("room-"+r.code, "", r.cl.cfg.Engines)
	if err := r.se.Open(ctx, r.state.Run); err != nil {
		// quarantined: said to the instructor, not replayed on every load
		r.state.Broken = fmt.Sprintf("the room's saved state could not be replayed (%v): choose a lesson step or run a new prompt", err)
		r.cl.log.Error("a room's saved state did not replay", "room", r.code, "err", err)
		if serr := r.save(ctx); serr != nil {
			r.cl.log.Error("saving a quarantined room", "room", r.code, "err", serr)
		}
	}
}

// gotoLessonStep runs lesson step i in the room's session.
func (r *Room) gotoLessonStep(ctx context.Context, i int) error {
	if err := r.se.PlayLesson(ctx, r.lesson, i); err != nil {
		return err
	}
	r.state.LessonStep = i
	r.capture()
	return nil
}

// capture copies the session's run (the seed drawn, the view) into the
// saved state.
func (r *Room) capture() { r.state.Run, r.state.Broken = r.se.Spec(), "" }

func (r *Room) save(ctx context.Context) error {
	if r.cl.store == nil {
		return nil
	}
	rec := Record{Code: r.code, SecretHash: r.secretHash, Creator: r.creator, Created: r.created, Expires: r.expiry(), Version: r.stored}
	v, err := r.cl.store.SaveRoom(context.WithoutCancel(ctx), rec, r.state)
	if err != nil {
		return err
	}
	r.hold(v)
	r.cl.publish(Event{Room: r.code, Kind: EventState, Version: v})
	return nil
}

// shutdown drops every connection (shutdown, expiry, unload: clients
// reconnect and find the room again, or learn it is gone) and ends the
// goroutine.
func (r *Room) shutdown() {
	r.post(func() {
		if !r.flush(r.engineCtx()) {
			r.cl.log.Error("the room closes with writes the store refused: they are lost", "room", r.code,
				"pending", r.unsaved.pending(), "err", r.unsaved.err)
		}
		for c := range r.clients {
			c.conn.Close(wsconn.CloseRestart, "reconnect")
			r.release(c)
		}
		if r.se != nil {
			r.se.Close()
		}
		r.closed = true
	})
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

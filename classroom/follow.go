package classroom

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"stepthrough/views"
	"stepthrough/wsconn"
)

// Several servers may hold the same room: the instructor on one, students
// on others, all reading one shared store. The store's version of a room
// orders its changes: a server writes the room's state only from the
// version it holds (Store.SaveRoom), so two instructor tabs on two servers
// never fork it — the second write is refused, and that server reloads the
// room and tells its instructor. After every write a server announces the
// room's new version on the Bus; the others read the state from the store
// (the message carries only the room's code, the kind and the version),
// replay it in their own engine session, render once and send the same
// bytes to their followers. Every FollowEvery each server also reads the
// versions of the rooms it holds, so a lost message, or a bus that is
// down, delays a follower by at most that long and loses nothing.

// Event is one message on the bus.
type Event struct {
	Room    string `json:"room"`
	Kind    string `json:"kind"` // EventState or EventAnswer
	Version int64  `json:"version,omitempty"`
	From    string `json:"from"` // the server that wrote the change
}

// Event kinds.
const (
	EventState  = "state"  // the room's state was saved at Version
	EventAnswer = "answer" // a student's answer was saved
)

// Bus carries room events between the servers sharing a store (NATS
// implements it).
type Bus interface {
	Publish(ev Event) error
	// Subscribe calls f with every event until the bus closes.
	Subscribe(f func(Event)) error
}

// DefaultFollowEvery is how often a server reads the versions of its
// rooms from a shared store.
const DefaultFollowEvery = 2 * time.Second

// answerReload spaces the reloads of a room's answers that answers saved
// on other servers cause (a poll of 1,000 students is not 1,000 reloads).
const answerReload = 200 * time.Millisecond

// ServerID is the name this server's events carry on the bus.
func (cl *Classroom) ServerID() string { return cl.cfg.ServerID }

// publish announces a change to the other servers.
func (cl *Classroom) publish(ev Event) {
	if cl.cfg.Bus == nil {
		return
	}
	ev.From = cl.cfg.ServerID
	if err := cl.cfg.Bus.Publish(ev); err != nil {
		cl.counts.busErrors.Add(1)
		cl.log.Warn("the bus refused an event: other servers catch up from the store", "room", ev.Room, "kind", ev.Kind, "err", err)
		return
	}
	cl.counts.published.Add(1)
}

// Receive handles an event from the bus: a room this server holds
// catches up from the store. Anyone who can publish on the bus can send
// events, so one costs a lookup here, no goroutine, and a burst for a
// room coalesces into at most one queued catch-up (heardState) or one
// answer reload per answerReload (heardAnswer).
func (cl *Classroom) Receive(ev Event) {
	if ev.From == cl.cfg.ServerID {
		return
	}
	cl.counts.received.Add(1)
	r := cl.held(ev.Room)
	if r == nil || !r.isReady() || r.err != nil {
		return
	}
	switch ev.Kind {
	case EventState:
		r.heardState(ev.Version)
	case EventAnswer:
		r.heardAnswer()
	}
}

// Follow reads the versions of the rooms this server holds every
// FollowEvery until ctx ends, and has each room that is behind catch up.
func (cl *Classroom) Follow(ctx context.Context) {
	if cl.store == nil {
		return
	}
	t := time.NewTicker(cl.cfg.FollowEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cl.checkMarks(ctx)
	}
}

func (cl *Classroom) checkMarks(ctx context.Context) {
	rooms := cl.live()
	codes := slices.Collect(maps.Keys(rooms))
	if len(codes) == 0 {
		return
	}
	marks, err := cl.store.Marks(ctx, codes)
	if err != nil {
		if ctx.Err() == nil {
			cl.counts.storeErrors.Add(1)
			if !cl.marksFailing.Swap(true) { // once per outage
				cl.log.Warn("reading the rooms' versions: servers cannot follow each other's rooms until the store answers", "rooms", len(codes), "err", err)
			}
		}
		return
	}
	if cl.marksFailing.Swap(false) {
		cl.log.Info("the rooms' versions can be read again", "rooms", len(codes))
	}
	for code, r := range rooms {
		m, ok := marks[code]
		r.post(func() {
			if !ok || m.Version > r.stored || m.Answers != countAnswers(r.answers) {
				r.catchUp(r.engineCtx())
			}
			r.believe()
		})
	}
}

func countAnswers(a map[int]map[string]string) int {
	n := 0
	for _, m := range a {
		n += len(m)
	}
	return n
}

// heardState handles a state event for version v (outside the room's
// goroutine): a version the room holds, or has heard of already, costs
// nothing more; a newer one queues a catch-up unless one is queued, which
// will read the newest. A catch-up that finds the store behind what was
// announced means the bus lies (a server writes the store before it
// announces), so the room stops believing it until the next read of the
// store's versions: forged events cost a store read at most once per
// FollowEvery.
func (r *Room) heardState(v int64) {
	if r.doubted.Load() || !raise(&r.heard, v) || r.catching.Swap(true) {
		return
	}
	r.post(func() {
		r.catching.Store(false)
		if r.doubted.Load() {
			return
		}
		want := r.heard.Load()
		if r.catchUp(r.engineCtx()) == nil && !r.closed && r.stored < want {
			r.distrust(want)
		}
	})
}

// heardAnswer handles an answer event (outside the room's goroutine): the
// first schedules a reload of the room's answers after answerReload, and
// the ones before it runs cost nothing more (a poll of 1,000 students is
// not 1,000 reloads).
func (r *Room) heardAnswer() {
	if r.answersDue.Swap(true) {
		return
	}
	time.AfterFunc(answerReload, func() {
		r.do(context.Background(), func() {
			r.answersDue.Store(false)
			r.catchUp(r.engineCtx())
		})
	})
}

// distrust stops believing the bus's state events for the room until
// believe (on the room's goroutine).
func (r *Room) distrust(announced int64) {
	r.doubted.Store(true)
	if r.cl.counts.busDoubts.Add(1) == 1 {
		r.cl.log.Warn("the bus announced a version of a room that the store does not hold: a forged event? The room follows the store alone until its next read of the versions (further ones are counted, not logged)",
			"room", r.code, "announced", announced, "stored", r.stored)
	}
}

// believe trusts the bus again, from what the room holds now (on the
// room's goroutine, after reading the store's versions).
func (r *Room) believe() {
	r.heard.Store(r.stored)
	r.doubted.Store(false)
}

// hold records the state's version in the store (on the room's
// goroutine); events at or below it cost nothing.
func (r *Room) hold(v int64) {
	r.stored = v
	raise(&r.heard, v)
}

// raise sets a to v if v is larger, and says whether it did.
func raise(a *atomic.Int64, v int64) bool {
	for {
		old := a.Load()
		if v <= old {
			return false
		}
		if a.CompareAndSwap(old, v) {
			return true
		}
	}
}

// catchUp reads the room from the store and shows what changed: a newer
// state is replayed in the room's session and broadcast; answers saved on
// other servers join this server's (its own not yet saved are kept); a
// room that has ended or expired closes here too. The error is the
// store's, when it did not answer.
func (r *Room) catchUp(ctx context.Context) error {
	if r.closed {
		return nil
	}
	r.cl.counts.reloads.Add(1)
	sr, err := r.cl.store.LoadRoom(ctx, r.code)
	if errors.Is(err, ErrNoRoom) || (err == nil && !time.Now().Before(sr.Expires)) {
		r.finish()
		r.cl.log.Info("room ended on another server", "room", r.code)
		return nil
	}
	if err != nil {
		r.cl.counts.storeErrors.Add(1)
		r.cl.log.Warn("catching up with the store", "room", r.code, "err", err)
		return fmt.Errorf("catching up room %s: %w", r.code, err)
	}
	changed := false
	if sr.Version > r.stored {
		r.state, changed = sr.State, true
		r.hold(sr.Version)
		r.setExpiry(sr.Expires)
		if r.state.Revealed == nil {
			r.state.Revealed = map[int]bool{}
		}
		if r.state.Broken == "" {
			if err := r.se.Follow(ctx, r.state.Run); err != nil {
				r.cl.log.Error("replaying a room changed on another server", "room", r.code, "err", err)
				r.rebuild(ctx)
			}
		}
		r.cl.counts.caughtUp.Add(1)
	}
	for k := range r.unsaved.answers { // ours, not yet in the store
		if a, ok := r.answers[k.step][k.student]; ok {
			if sr.Answers[k.step] == nil {
				sr.Answers[k.step] = map[string]string{}
			}
			sr.Answers[k.step][k.student] = a
		}
	}
	if !maps.EqualFunc(sr.Answers, r.answers, maps.Equal) { // new or changed answers: the instructor's poll shows them
		r.teachSoon()
	}
	r.answers = sr.Answers
	if changed {
		r.broadcast()
	}
	return nil
}

// conflicted handles a write the store refused because another server
// changed the room first: the room reloads, and its instructors here are
// told their last action did not apply.
func (r *Room) conflicted(ctx context.Context) {
	r.cl.counts.conflicts.Add(1)
	r.cl.log.Info("the room changed on another server first: reloading it", "room", r.code, "version", r.stored)
	r.stored = 0 // whatever the store holds is newer
	r.catchUp(ctx)
	for c := range r.clients {
		if c.instructor {
			c.conn.Note("The room was changed from another screen at the same moment, so this action was not applied. This is the room as it is now: try again if you still want it.")
		}
	}
}

// finish closes the room because it ended (here, or on another server, or
// expired): every screen says so and the connections close.
func (r *Room) finish() {
	bye := wsconn.Prepare(render(views.RoomEnded()))
	for c := range r.clients {
		c.conn.Send(bye)
		c.conn.Close(wsconn.CloseNormal, "the room has ended")
		r.release(c)
	}
	r.closed = true
	if r.se != nil {
		r.se.Close()
	}
	r.setExpiry(time.Now())
}

// held is the room with code in memory here, or nil.
func (cl *Classroom) held(code string) *Room {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.rooms[code]
}

// live are the rooms in memory here that started and have not ended.
func (cl *Classroom) live() map[string]*Room {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	rooms := map[string]*Room{}
	for code, r := range cl.rooms {
		if r.isReady() && r.err == nil && !r.ended() {
			rooms[code] = r
		}
	}
	return rooms
}

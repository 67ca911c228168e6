package classroom

import (
	"context"
	"errors"
	"time"
)

// Writes the store refused (a full disk, a read-only file system) are kept
// in the room's memory and retried every RetryEvery until they succeed:
// the room goes on, every screen says it is not being saved, and once the
// store takes writes again nothing given meanwhile is missing from it.

// answerKey is one student's answer at one lesson step.
type answerKey struct {
	step    int
	student string
}

// unsaved is what the room holds that the store does not. It is owned by
// the room's goroutine; Room.dirty mirrors "anything pending" for the
// sweep.
type unsaved struct {
	state    bool // the room's state (and expiry) needs writing
	answers  map[answerKey]bool
	err      error // the store's last refusal; nil while writes succeed
	retrying bool  // a retry is scheduled
}

// pending is how many writes wait: the state counts as one.
func (u *unsaved) pending() int {
	n := len(u.answers)
	if u.state {
		n++
	}
	return n
}

// persist saves the room's state, keeping it to retry when the store
// refuses. It reports false when another server had changed the room
// first: the write was refused and the room now shows the stored state
// (conflicted), so the caller must not send its own.
func (r *Room) persist(ctx context.Context) bool {
	if r.cl.store == nil {
		r.hold(r.stored + 1) // the state's version in memory
		return true
	}
	if r.unsaved.err != nil { // still failing: queue behind the rest
		r.unsaved.state = true
		return true
	}
	err := r.save(ctx)
	switch {
	case errors.Is(err, ErrConflict):
		r.conflicted(ctx)
		return false
	case err != nil:
		r.unsaved.state = true
		r.storeFailed(err)
	}
	return true
}

// persistAnswer saves one answer, keeping it to retry when the store
// refuses.
func (r *Room) persistAnswer(ctx context.Context, step int, student, answer string) {
	if r.cl.store == nil {
		return
	}
	k := answerKey{step, student}
	if r.unsaved.err == nil {
		err := r.cl.store.SaveAnswer(context.WithoutCancel(ctx), r.code, step, student, answer)
		if err == nil {
			r.cl.publish(Event{Room: r.code, Kind: EventAnswer})
			return
		}
		r.storeFailed(err)
	}
	if r.unsaved.answers == nil {
		r.unsaved.answers = map[answerKey]bool{}
	}
	r.unsaved.answers[k] = true
	r.dirty.Store(true)
}

// storeFailed notes a refused write: the first one tells every screen
// and the log, and schedules the retries.
func (r *Room) storeFailed(err error) {
	r.cl.counts.storeErrors.Add(1)
	first := r.unsaved.err == nil
	r.unsaved.err = err
	r.dirty.Store(true)
	if first {
		r.cl.log.Error("the classroom store refused a write: keeping the room's changes in memory and retrying", "room", r.code, "err", err)
		r.broadcast()
	}
	r.retryLater()
}

// retryLater schedules one retry (at most one is ever waiting).
func (r *Room) retryLater() {
	if r.unsaved.retrying {
		return
	}
	r.unsaved.retrying = true
	time.AfterFunc(r.cl.cfg.RetryEvery, func() {
		r.post(func() {
			r.unsaved.retrying = false
			r.flush(r.engineCtx())
		})
	})
}

// flush writes what is pending: the state, then the answers. It stops at
// the first refusal (and retries later); when everything is written the
// screens lose their warning. It reports whether nothing is left.
func (r *Room) flush(ctx context.Context) bool {
	if r.unsaved.err == nil || r.closed {
		return r.unsaved.err == nil
	}
	if r.unsaved.state {
		err := r.save(ctx)
		switch {
		case errors.Is(err, ErrConflict): // changed on another server meanwhile: theirs stands
			defer r.conflicted(ctx)
		case err != nil:
			r.storeFailed(err)
			return false
		}
		r.unsaved.state = false
	}
	for k := range r.unsaved.answers {
		a, ok := r.answers[k.step][k.student]
		if ok {
			if err := r.cl.store.SaveAnswer(context.WithoutCancel(ctx), r.code, k.step, k.student, a); err != nil {
				r.storeFailed(err)
				return false
			}
		}
		delete(r.unsaved.answers, k)
	}
	r.unsaved.err = nil
	r.dirty.Store(false)
	r.cl.publish(Event{Room: r.code, Kind: EventAnswer})
	r.cl.log.Info("the classroom store takes writes again: the room's kept changes are saved", "room", r.code)
	r.broadcast()
	return true
}

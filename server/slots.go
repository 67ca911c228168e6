package server

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// workSlots are the server's work slots (one per core, at least two):
// one-off engine work (/patching, Compare, exports, lesson pages) and the
// Explorer's runs each hold one while they compute. An address holds at
// most perAddr at once, and as slots free up the addresses waiting are
// served in turn, each its own requests first come first served, so one
// address's back-to-back runs cannot starve another's.
type workSlots struct {
	n, perAddr int

	mu      sync.Mutex
	inUse   int
	held    map[string]int       // slots each address holds
	waiting map[string][]*waiter // each address's waiters, oldest first
	turn    []string             // addresses with waiters, the next to serve first
}

type waiter struct {
	granted chan struct{} // closed when the slot is this waiter's
}

func newWorkSlots(n, perAddr int) *workSlots {
	if perAddr <= 0 || perAddr > n {
		perAddr = max(1, n/2)
	}
	return &workSlots{n: n, perAddr: perAddr, held: map[string]int{}, waiting: map[string][]*waiter{}}
}

// errSlotWait is acquire's answer when no slot came within its wait.
var errSlotWait = errors.New("no work slot within the wait")

// acquire takes a slot for addr, waiting at most wait (or until ctx is
// done); release gives it back.
func (w *workSlots) acquire(ctx context.Context, addr string, wait time.Duration) (release func(), err error) {
	me, ok := w.enter(addr)
	if ok {
		return w.releaser(addr), nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-me.granted:
		return w.releaser(addr), nil
	case <-t.C:
		err = errSlotWait
	case <-ctx.Done():
		err = ctx.Err()
	}
	if w.leave(addr, me) { // granted as the wait ended: hand it on
		w.releaser(addr)()
	}
	return nil, err
}

// enter takes a free slot at once (when addr is under its share and has
// no older waiter), else queues a waiter.
func (w *workSlots) enter(addr string) (*waiter, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inUse < w.n && w.held[addr] < w.perAddr && len(w.waiting[addr]) == 0 {
		w.take(addr)
		return nil, true
	}
	me := &waiter{granted: make(chan struct{})}
	if len(w.waiting[addr]) == 0 {
		w.turn = append(w.turn, addr)
	}
	w.waiting[addr] = append(w.waiting[addr], me)
	return me, false
}

// leave takes a waiter that gave up out of the queue; true when a slot
// had been granted to it meanwhile (the caller gives it back).
func (w *workSlots) leave(addr string, me *waiter) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-me.granted:
		return true
	default:
	}
	q := slices.DeleteFunc(w.waiting[addr], func(x *waiter) bool { return x == me })
	if len(q) > 0 {
		w.waiting[addr] = q // its place in turn stays
		return false
	}
	delete(w.waiting, addr)
	w.turn = slices.DeleteFunc(w.turn, func(a string) bool { return a == addr })
	return false
}

func (w *workSlots) releaser(addr string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.inUse--
			if w.held[addr]--; w.held[addr] == 0 {
				delete(w.held, addr)
			}
			w.dispatch()
		})
	}
}

// dispatch hands free slots to waiters: the addresses in turn, a served
// address going to the back while it has more. w.mu is held.
func (w *workSlots) dispatch() {
	for w.inUse < w.n {
		i := slices.IndexFunc(w.turn, func(a string) bool { return w.held[a] < w.perAddr })
		if i < 0 {
			return // every waiting address holds its share
		}
		addr := w.turn[i]
		w.turn = slices.Delete(w.turn, i, i+1)
		q := w.waiting[addr]
		w.take(addr)
		close(q[0].granted)
		if q = q[1:]; len(q) > 0 {
			w.waiting[addr] = q
			w.turn = append(w.turn, addr)
		} else {
			delete(w.waiting, addr)
		}
	}
}

func (w *workSlots) take(addr string) {
	w.inUse++
	w.held[addr]++
}

// usage is the slots in use in all and those addr holds.
func (w *workSlots) usage(addr string) (all, mine int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.inUse, w.held[addr]
}

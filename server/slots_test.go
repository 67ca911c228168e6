package server

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// queued counts the waiters of the slots.
func (w *workSlots) queued() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, q := range w.waiting {
		n += len(q)
	}
	return n
}

// An address holds at most its share of the slots: its next request
// waits while another address is served at once.
func TestSlotsShareByAddress(t *testing.T) {
	for _, tc := range []struct {
		name           string
		n, perAddr     int
		wantShare      int
		othersAtOnce   int
		floodRequests  int
		wantFloodHolds int
	}{
		{"two slots: one each", 2, 0, 1, 1, 5, 1},
		{"four slots: two each", 4, 0, 2, 2, 5, 2},
		{"a share set by hand", 4, 3, 3, 1, 5, 3},
		{"a share over the slots is half", 3, 9, 1, 1, 5, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkSlots(tc.n, tc.perAddr)
			if w.perAddr != tc.wantShare {
				t.Fatalf("share %d, want %d", w.perAddr, tc.wantShare)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var wg sync.WaitGroup
			for range tc.floodRequests {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if release, err := w.acquire(ctx, "flood", time.Minute); err == nil {
						<-ctx.Done()
						release()
					}
				}()
			}
			eventually(t, "the flood's requests hold or wait", func() bool {
				all, _ := w.usage("flood")
				return all+w.queued() == tc.floodRequests
			})
			if _, mine := w.usage("flood"); mine != tc.wantFloodHolds {
				t.Errorf("the flooding address holds %d slots, want %d", mine, tc.wantFloodHolds)
			}
			for i := range tc.othersAtOnce {
				if _, ok := w.enter("other"); !ok {
					t.Fatalf("another address's request %d waits while the flood holds its share", i+1)
				}
			}
			cancel()
			wg.Wait()
		})
	}
}

// Freed slots go to the waiting addresses in turn, each address's own
// requests first come first served: a flood queued first does not keep
// a later address waiting behind all of it.
func TestSlotsServeAddressesInTurn(t *testing.T) {
	w := newWorkSlots(2, 1) // 2 slots, 1 per address
	w.enter("a")
	w.enter("b")
	waiters := map[string]*waiter{}
	for _, r := range []struct{ name, addr string }{{"a1", "a"}, {"a2", "a"}, {"a3", "a"}, {"c1", "c"}, {"b1", "b"}} {
		me, ok := w.enter(r.addr)
		if ok {
			t.Fatalf("%s took a slot with none free", r.name)
		}
		waiters[r.name] = me
	}
	var order []string
	served := func() {
		for name, me := range waiters {
			select {
			case <-me.granted:
				order = append(order, name)
				delete(waiters, name)
			default:
			}
		}
	}
	// each release, and the address of the request served before it
	for _, addr := range []string{"a", "b", "a", "c", "b", "a", "a"} {
		w.releaser(addr)()
		served()
	}
	if want := []string{"a1", "c1", "b1", "a2", "a3"}; !slices.Equal(order, want) {
		t.Errorf("served %v, want %v", order, want)
	}
	if all, _ := w.usage("a"); all != 0 || w.queued() != 0 {
		t.Errorf("after every release: %d slots in use, %d waiting", all, w.queued())
	}
}

// A request that stops waiting (its wait is over, or its client went)
// leaves the queue, and a slot granted to it just then is handed on, not
// lost.
func TestSlotsWaitEnds(t *testing.T) {
	w := newWorkSlots(2, 1)
	release, _ := w.acquire(context.Background(), "a", time.Minute)
	if _, err := w.acquire(context.Background(), "a", time.Millisecond); !errors.Is(err, errSlotWait) {
		t.Errorf("a wait that ran out: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.acquire(ctx, "a", time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("a client that went: %v", err)
	}
	if w.queued() != 0 {
		t.Fatalf("%d waiters left behind", w.queued())
	}
	// granted as it gave up: the slot goes back
	me, _ := w.enter("a")
	release()
	if !w.leave("a", me) {
		t.Fatal("the waiter was not granted the freed slot")
	}
	w.releaser("a")()
	if all, _ := w.usage("a"); all != 0 || w.queued() != 0 {
		t.Errorf("%d slots in use, %d waiting after everyone left", all, w.queued())
	}
}

package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"stepthrough/hfhub"
	"stepthrough/present"
	"stepthrough/views"
)

// pulls are the Models page's pulls from the Hugging Face Hub, one per
// model reference at a time: a second request for a running one joins
// it. The last pull of each reference is kept for its status.
type pulls struct {
	mu sync.Mutex
	by map[string]*pull
}

// pull is one pull under way or ended.
type pull struct {
	ref         string
	cancel      context.CancelFunc
	start       time.Time
	done, total atomic.Int64
	base        atomic.Int64 // bytes there when this pull's first ones arrived (-1: none yet)
	ended       chan struct{}
	res         *hfhub.Result // set before ended closes
	err         error         // set before ended closes
}

// start runs a pull of ref unless one is running, and returns the
// running one; onDone is called with its result when it ends well.
func (ps *pulls) start(c *hfhub.Client, ref hfhub.Ref, memory uint64, onDone func(*hfhub.Result)) *pull {
	key := ref.Repo // a tag is matched without case: q8_0 joins Q8_0's pull
	if ref.Quant != "" {
		key += ":" + strings.ToUpper(ref.Quant)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.by == nil {
		ps.by = map[string]*pull{}
	}
	if p, ok := ps.by[key]; ok && !p.isEnded() {
		return p
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &pull{ref: key, cancel: cancel, start: time.Now(), ended: make(chan struct{})}
	p.base.Store(-1)
	ps.by[key] = p
	go func() {
		defer close(p.ended)
		defer cancel()
		defer func() { // a pull's failure, even a panic in it, ends that pull only
			if v := recover(); v != nil {
				p.res, p.err = nil, fmt.Errorf("pulling %s failed: %v", key, v)
			}
		}()
		p.res, p.err = c.Pull(ctx, hfhub.Request{Ref: ref}, hfhub.Options{Memory: memory, Progress: p.progress})
		if p.err == nil {
			onDone(p.res)
		}
	}()
	return p
}

// get is the last pull of ref.
func (ps *pulls) get(ref string) (*pull, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.by[ref]
	return p, ok
}

func (p *pull) progress(done, total int64) {
	p.base.CompareAndSwap(-1, done)
	p.done.Store(done)
	p.total.Store(total)
}

func (p *pull) isEnded() bool {
	select {
	case <-p.ended:
		return true
	default:
		return false
	}
}

// status is the pull as the page shows it.
func (p *pull) status() views.PullStatus {
	done := p.done.Load()
	st := present.PullState{Ref: p.ref, Done: done, Total: p.total.Load(), Fetched: done - max(p.base.Load(), 0), Elapsed: time.Since(p.start), Ended: p.isEnded()}
	if st.Ended { // res and err are set before ended closes
		st.Result, st.Err = p.res, p.err
	}
	return present.PullStatus(st)
}

// cancelAll stops every running pull (the server is closing).
func (ps *pulls) cancelAll() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.by {
		p.cancel()
	}
}

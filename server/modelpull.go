package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"stepthrough/hfhub"
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
	s := views.PullStatus{Ref: p.ref, State: "running", Done: p.done.Load(), Total: p.total.Load()}
	if !p.isEnded() {
		s.Text = progressWords(s.Done-max(p.base.Load(), 0), s.Done, s.Total, time.Since(p.start))
		if s.Total == 0 {
			s.Text = "Listing the repository's files and checking the file's header…"
		}
		s.Announce = "Pulling " + p.ref + "."
		return s
	}
	switch {
	case errors.Is(p.err, context.Canceled):
		s.State, s.Text = "cancelled", fmt.Sprintf("Cancelled after %s of %s; the bytes fetched are kept, and the next pull continues from them.", hfhub.Size(s.Done), hfhub.Size(s.Total))
	case p.err != nil:
		s.State, s.Text = "failed", p.err.Error()
	default:
		r := p.res
		s.State, s.Name, s.Done, s.Total = "done", r.Name, r.Size, r.Size
		s.Text = fmt.Sprintf("%s (%s, %s) is in the cache, offered as %s.", r.File, hfhub.Size(r.Size), r.Why, r.Name)
		if r.Fetched == 0 && r.Resumed == 0 {
			s.Text = fmt.Sprintf("%s (%s, %s) was in the cache already, offered as %s.", r.File, hfhub.Size(r.Size), r.Why, r.Name)
		}
	}
	s.Announce = "Pull of " + p.ref + " " + s.State + ". " + s.Text
	return s
}

// progressWords is a pull's progress in words: "1.5 GiB of 4.0 GiB
// (38%), 21.3 MiB/s, about 2m0s left"; the rate counts this pull's bytes.
func progressWords(fetched, done, total int64, elapsed time.Duration) string {
	s := fmt.Sprintf("%s of %s (%.0f%%)", hfhub.Size(done), hfhub.Size(total), 100*float64(done)/float64(max(total, 1)))
	if elapsed < time.Second/2 || fetched <= 0 {
		return s
	}
	rate := float64(fetched) / elapsed.Seconds()
	left := time.Duration(float64(total-done) / rate * float64(time.Second)).Round(time.Second)
	return fmt.Sprintf("%s, %s/s, about %s left", s, hfhub.Size(int64(rate)), left)
}

// cancelAll stops every running pull (the server is closing).
func (ps *pulls) cancelAll() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.by {
		p.cancel()
	}
}

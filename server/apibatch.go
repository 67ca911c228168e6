package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"stepthrough/api"
	"stepthrough/engine"
	"stepthrough/engine/serve"
)

// The API's generation: every request's choices are sequences in one
// continuous batch per model (engine/serve's scheduler), as llama.cpp's
// server and vLLM run them, so concurrent clients share forward passes;
// full prompt blocks stay in a prefix cache after their request ends.

// apiBatches are the API's schedulers, one per model, started on first use
// and run until the server stops, at most apiMaxBatches at once (each
// holds its KV cache): past it, the least recently used idle one stops.
type apiBatches struct {
	mu sync.Mutex
	m  map[string]*apiBatch
}

// apiBatch is one model's scheduler, on the loaded model it was made for.
type apiBatch struct {
	sch  *serve.Scheduler
	lm   *engine.Loaded
	stop context.CancelFunc
	used time.Time
}

// apiMaxBatches bounds the models the API keeps a batch (and its KV
// cache) for at once.
const apiMaxBatches = 4

// apiBlockSize is the paged KV cache's block (positions), as vLLM's.
const apiBlockSize = 16

// batch returns the scheduler serving model name on lm, starting it (and
// replacing one made for a model the registry has since loaded again).
func (s *Server) batch(name string, lm *engine.Loaded) (*serve.Scheduler, error) {
	b := &s.apiBatch
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.m[name]; ok && e.lm == lm {
		e.used = time.Now()
		return e.sch, nil
	} else if ok {
		e.stop()
		delete(b.m, name)
	}
	b.evictIdle()
	sch, err := serve.New(lm, s.batchOptions(lm))
	if err != nil {
		return nil, fmt.Errorf("the API's batch for %s: %w", name, err)
	}
	ctx, stop := context.WithCancel(s.batches)
	go func() {
		if err := sch.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Error("the API's batch stopped", "model", name, "err", err)
		}
	}()
	if b.m == nil {
		b.m = map[string]*apiBatch{}
	}
	b.m[name] = &apiBatch{sch: sch, lm: lm, stop: stop, used: time.Now()}
	return sch, nil
}

// batchOptions are the API batch's settings for lm: continuous batching
// with chunked prefill; on the CPU a paged KV cache with the prefix cache.
func (s *Server) batchOptions(lm *engine.Loaded) serve.Options {
	cfg := s.cfg.API
	opt := serve.Options{MaxSeqs: cfg.MaxConcurrent, ChunkedPrefill: true}
	c := lm.Model.Config
	perPos := int64(c.Layers) * int64(c.KVDim()) * 8
	opt.KVPositions = int(min(int64(cfg.MaxConcurrent*lm.Context()), max(cfg.KVBytes/perPos, int64(lm.Context()))))
	if lm.Backend().Name == "cpu" { // paged blocks and the prefix cache run on the CPU
		opt.Paged, opt.PrefixCache, opt.BlockSize = true, true, apiBlockSize
		opt.KVPositions = max(opt.KVPositions/apiBlockSize, 1) * apiBlockSize
	}
	return opt
}

// evictIdle stops the least recently used idle batch while apiMaxBatches
// are running (b.mu held).
func (b *apiBatches) evictIdle() {
	for len(b.m) >= apiMaxBatches {
		oldest := ""
		for name, e := range b.m {
			if g := e.sch.Gauges(); g.Running+g.Waiting == 0 && (oldest == "" || e.used.Before(b.m[oldest].used)) {
				oldest = name
			}
		}
		if oldest == "" {
			return // every batch is busy: one more for now
		}
		b.m[oldest].stop()
		delete(b.m, oldest)
	}
}

// all is every model's running batch.
func (b *apiBatches) all() map[string]*serve.Scheduler {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]*serve.Scheduler, len(b.m))
	for name, e := range b.m {
		out[name] = e.sch
	}
	return out
}

// choiceEvent is a choice's delta, or its end.
type choiceEvent struct {
	i     int
	delta api.Delta
	end   *serve.Event
}

// tokenStep is where a watched choice's token was computed: the
// scheduler's step and the requests in it beside this one.
type tokenStep struct {
	Step  int
	Mates []string
}

// choices runs every choice of x as a sequence of the model's batch,
// calling emit with each delta and done as each choice ends, in the
// order they happen. A client that goes away (ctx) frees its sequences
// at the next step.
func (s *Server) choices(ctx context.Context, x *apiExchange, emit func(i int, d api.Delta) error, done func(*api.Choice) error) ([]*api.Choice, error) {
	if x.probe != nil {
		return s.probedChoices(ctx, x, emit, done)
	}
	n := x.req.N
	out := make(chan choiceEvent, n*(x.gen.Max+3))
	replies := make([]*api.Reply, n)
	handles := make([]*serve.Handle, 0, n)
	defer func() {
		for _, h := range handles {
			h.Cancel() // a no-op for a finished one
		}
	}()
	for i := range n {
		r := x.gen.Reply(i)
		replies[i] = r
		req := serve.Request{Label: x.id, Prompt: x.gen.IDs, MaxTokens: x.gen.Max, Sampling: x.gen.Sampling(i), IgnoreEOS: x.req.IgnoreEOS, CacheScope: x.scope,
			OnToken: func(t serve.Token) bool { // in the scheduler's goroutine: never blocks (out holds every delta)
				d, complete := r.Token(t.ID, t.Logits)
				if i == 0 && len(x.steps) < maxWatchedTokens {
					x.steps = append(x.steps, tokenStep{t.Step, t.Mates()})
				}
				if !d.Empty() {
					out <- choiceEvent{i: i, delta: d}
				}
				return complete
			}}
		if n > 1 {
			req.Label = fmt.Sprintf("%s[%d]", x.id, i)
		}
		h, err := x.batch.Submit(req)
		if err != nil {
			return nil, err
		}
		handles = append(handles, h)
		go func() {
			for ev := range h.Events {
				if ev.Done {
					out <- choiceEvent{i: i, end: &ev}
				}
			}
		}()
	}
	choices := make([]*api.Choice, n)
	for left := n; left > 0; {
		var ev choiceEvent
		select {
		case ev = <-out:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if ev.end == nil {
			if err := emit(ev.i, ev.delta); err != nil {
				return nil, err
			}
			continue
		}
		switch ev.end.Finish {
		case serve.FinishError:
			return nil, ev.end.Err
		case serve.FinishCancelled:
			return nil, errors.New("the server stopped generating: it is shutting down")
		}
		d, c := replies[ev.i].End(ev.end.Finish)
		c.Seed = handles[ev.i].Seed
		s.metrics.observe(x.model, ev.end.Times)
		x.cached = max(x.cached, ev.end.Times.Cached)
		if ev.i == 0 {
			x.times = ev.end.Times
		}
		if !d.Empty() {
			if err := emit(ev.i, d); err != nil {
				return nil, err
			}
		}
		if err := done(c); err != nil {
			return nil, err
		}
		choices[ev.i] = c
		left--
	}
	return choices, nil
}

package cpu

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"stepthrough/engine/intervene"
	"stepthrough/engine/kv"
	"stepthrough/engine/model"
)

// Loaded is a model prepared for the CPU once — its decoded norm and bias
// vectors, a thread pool and the activation buffers of a forward pass — and
// shared by every Runner made from it. A Runner holds only its KV cache and
// its logits, so making one copies no weights. Forward passes of the
// runners of one Loaded take turns (the pool already uses every thread it
// was given).
type Loaded struct {
	mu     sync.Mutex
	f      *fwd
	closed bool
}

// Load prepares m for CPU runners of at most opt.Context positions.
func Load(m *model.Model, opt Options) (*Loaded, error) {
	f, err := newFwd(m, opt)
	if err != nil {
		return nil, err
	}
	l := &Loaded{f: f}
	// A Loaded dropped without Close (a cache that let go of a model
	// some runner may still use) stops its threads once it and its
	// runners are unreachable. Closing the pool twice is harmless.
	runtime.AddCleanup(l, func(p *Pool) { p.Close() }, f.pool)
	return l, nil
}

// Model is the model this was loaded from.
func (l *Loaded) Model() *model.Model { return l.f.m }

// Threads is the number of worker threads a pass uses.
func (l *Loaded) Threads() int { return l.f.pool.Threads() }

// Context is the most positions one of its runners may hold.
func (l *Loaded) Context() int { return l.f.ctx }

// Close stops the thread pool. Runners made from l must not be used after.
func (l *Loaded) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		l.f.pool.Close()
	}
}

// NewRunner makes a runner with an empty KV cache of ctx positions (0: the
// Loaded's context). Its cache takes memory only as positions fill.
func (l *Loaded) NewRunner(ctx int) (*Runner, error) {
	c := l.f.cfg
	if ctx <= 0 {
		ctx = l.f.ctx
	}
	if ctx > l.f.ctx {
		return nil, fmt.Errorf("context %d exceeds the %d positions this model was loaded for", ctx, l.f.ctx)
	}
	cache, err := kv.New(c.Layers, ctx, c.KVDim())
	if err != nil {
		return nil, err
	}
	return &Runner{l: l, cache: cache, logits: make([]float32, c.Vocab)}, nil
}

// Runner is one sequence's state on a Loaded model: its KV cache and the
// last position's logits. A Runner is not safe for concurrent use; the
// runners of one Loaded may be used from different goroutines.
type Runner struct {
	l      *Loaded
	own    bool     // NewRunner made l for this runner alone
	cache  kv.Store // a *kv.Cache, or a *kv.Paged in a shared pool
	logits []float32
	edits  *intervene.Set // applied to every pass (SetEdits); nil: none
}

// NewRunner loads m for this runner alone (Load and Loaded.NewRunner in
// one); Close then stops its threads.
func NewRunner(m *model.Model, opt Options) (*Runner, error) {
	l, err := Load(m, opt)
	if err != nil {
		return nil, err
	}
	r, err := l.NewRunner(0)
	if err != nil {
		l.Close()
		return nil, err
	}
	r.own = true
	return r, nil
}

// NewPagedRunner makes a runner whose KV cache is a block table in pool
// (made for this model's shape), of at most ctx positions (0: the
// Loaded's context). It takes blocks only as positions fill; Close gives
// them back.
func (l *Loaded) NewPagedRunner(pool *kv.Pool, ctx int) (*Runner, error) {
	c := l.f.cfg
	if pool.Layers != c.Layers || pool.Dim != c.KVDim() {
		return nil, fmt.Errorf("paged runner: a pool for %d layers × %d values cannot hold this model's %d × %d", pool.Layers, pool.Dim, c.Layers, c.KVDim())
	}
	if ctx <= 0 {
		ctx = l.f.ctx
	}
	if ctx > l.f.ctx {
		return nil, fmt.Errorf("context %d exceeds the %d positions this model was loaded for", ctx, l.f.ctx)
	}
	cache, err := pool.NewPaged(ctx)
	if err != nil {
		return nil, err
	}
	return &Runner{l: l, cache: cache, logits: make([]float32, c.Vocab)}, nil
}

// Close releases the runner (and its Loaded when NewRunner made it); a
// paged runner gives its blocks back.
func (r *Runner) Close() {
	if p, ok := r.cache.(*kv.Paged); ok {
		p.Free()
	}
	if r.own {
		r.l.Close()
	}
}

// Loaded is the shared model this runner computes on.
func (r *Runner) Loaded() *Loaded { return r.l }

// Model is the model this runner computes.
func (r *Runner) Model() *model.Model { return r.l.f.m }

// Cache is the runner's KV cache.
func (r *Runner) Cache() kv.Store { return r.cache }

// Pos is the number of positions processed (the next token's position).
func (r *Runner) Pos() int { return r.cache.Len() }

// Capacity is the number of positions the KV cache holds.
func (r *Runner) Capacity() int { return r.cache.Cap() }

// Threads is the number of worker threads.
func (r *Runner) Threads() int { return r.l.Threads() }

// CopyStateFrom makes r continue from where src is: its KV cache prefix
// (copied) and position. Both must run the same model.
func (r *Runner) CopyStateFrom(src *Runner) error {
	if src.Model() != r.Model() {
		return errors.New("copy state: runners of different models")
	}
	if dst, ok := r.cache.(*kv.Cache); ok {
		if s, ok := src.cache.(*kv.Cache); ok {
			return dst.CopyFrom(s, src.Pos())
		}
	}
	n := src.Pos() // between kinds of cache: row by row
	if n > r.cache.Cap() {
		return fmt.Errorf("copy state: %d positions do not fit in %d", n, r.cache.Cap())
	}
	r.cache.Truncate(0)
	if err := r.cache.Reserve(n); err != nil {
		return err
	}
	dim := r.l.f.cfg.KVDim()
	for l := range r.l.f.cfg.Layers {
		for j := 0; j < n; {
			k, v := src.cache.Rows(l, j, n)
			for i := range len(k) / dim {
				r.cache.Put(l, j+i, k[i*dim:(i+1)*dim], v[i*dim:(i+1)*dim])
			}
			j += len(k) / dim
		}
	}
	r.cache.SetLen(n)
	return nil
}

// Fork makes a runner on the same Loaded model that continues from where
// r is (a copy of its KV cache; later passes of either do not touch the
// other's).
func (r *Runner) Fork() (*Runner, error) {
	if p, ok := r.cache.(*kv.Paged); ok { // share the blocks, copy on write
		return &Runner{l: r.l, cache: p.Fork(), logits: make([]float32, r.l.f.cfg.Vocab), edits: r.edits}, nil
	}
	f, err := r.l.NewRunner(r.cache.Cap())
	if err != nil {
		return nil, err
	}
	if err := f.CopyStateFrom(r); err != nil {
		return nil, err
	}
	f.edits = r.edits
	return f, nil
}

// SetEdits makes set (checked against the model; nil or empty: none) the
// edits of every later pass of r until the next SetEdits.
func (r *Runner) SetEdits(set *intervene.Set) error {
	set, err := set.Checked(r.l.f.cfg.EditShape())
	if err == nil {
		r.edits = set
	}
	return err
}

// Reset empties the KV cache.
func (r *Runner) Reset() { r.cache.Truncate(0) }

// Truncate forgets positions from n on (rolling back tokens).
func (r *Runner) Truncate(n int) { r.cache.Truncate(n) }

// Forward runs tokens through the model at the next positions, appending
// their keys and values to the cache. It returns the logits of the last
// token (a buffer reused by the next call), or with all set, a new slice of
// len(tokens)×vocab logits, one row per token. Hooks in ctx (see package
// hooks) observe every stage, and the runner's edits (SetEdits) apply; they are called while the pass holds the
// Loaded model, so they must not run passes themselves.
func (r *Runner) Forward(ctx context.Context, tokens []int32, all bool) ([]float32, error) {
	l := r.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, model.ErrClosed
	}
	l.f.cache, l.f.logits, l.f.iv = r.cache, r.logits, r.edits
	defer func() { l.f.cache, l.f.logits, l.f.iv = nil, nil, nil }()
	return l.f.forward(ctx, tokens, all)
}

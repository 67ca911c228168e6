// Package cpu is the engine's CPU backend: multi-threaded kernels (matrix
// products over every weight type, norms, RoPE, attention, activations)
// and a Runner that computes whole forward passes with a KV cache.
//
// Each fast kernel has a plain reference loop it is tested against (see
// kernels_test.go); this backend is in turn the oracle for the others.
package cpu

import (
	"runtime"
	"sync"
)

// Pool runs data-parallel work on a fixed set of goroutines. Workers are
// started once and reused, so dispatching costs no allocation.
type Pool struct {
	n    int
	jobs []chan job
	wg   sync.WaitGroup
	fn   func(worker, lo, hi int)
}

type job struct{ lo, hi int }

// NewPool starts a pool of n workers (n <= 0: one per CPU).
func NewPool(n int) *Pool {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	p := &Pool{n: n, jobs: make([]chan job, n)}
	for w := 1; w < n; w++ {
		p.jobs[w] = make(chan job, 1)
		go p.worker(w)
	}
	return p
}

// Threads is the number of workers.
func (p *Pool) Threads() int { return p.n }

// Close stops the workers.
func (p *Pool) Close() {
	for w := 1; w < p.n; w++ {
		close(p.jobs[w])
	}
}

func (p *Pool) worker(w int) {
	for j := range p.jobs[w] {
		p.fn(w, j.lo, j.hi)
		p.wg.Done()
	}
}

// Parallel splits [0, n) into contiguous chunks and calls fn on each, the
// calling goroutine taking the first. grain is the smallest chunk worth a
// thread. Calls must not overlap (one forward pass at a time per pool).
func (p *Pool) Parallel(n, grain int, fn func(worker, lo, hi int)) {
	parts := p.n
	if grain < 1 {
		grain = 1
	}
	if m := (n + grain - 1) / grain; m < parts {
		parts = m
	}
	if parts <= 1 {
		if n > 0 {
			fn(0, 0, n)
		}
		return
	}
	p.fn = fn
	p.wg.Add(parts - 1)
	chunk := (n + parts - 1) / parts
	for w := 1; w < parts; w++ {
		lo := w * chunk
		p.jobs[w] <- job{lo, min(n, lo+chunk)}
	}
	fn(0, 0, min(n, chunk))
	p.wg.Wait()
	p.fn = nil
}

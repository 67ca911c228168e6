// Package cpu is the engine's CPU backend: multi-threaded kernels (matrix
// products over every weight type, norms, RoPE, attention, activations)
// and a Runner that computes whole forward passes with a KV cache.
//
// Each fast kernel has a plain reference loop it is tested against (see
// kernels_test.go); this backend is in turn the oracle for the others.
package cpu

import (
	"runtime"
	"sync/atomic"
)

// Task is work a Pool splits by index range. Tasks are long-lived values
// (pointers held by their owner), so dispatching one allocates nothing.
type Task interface {
	Run(worker, lo, hi int)
}

// Pool runs data-parallel work on a fixed set of goroutines. A decode step
// dispatches dozens of small jobs, so workers spin briefly on an atomic
// generation counter before parking: a parked goroutine costs a futex
// wake-up (several microseconds) per job.
type Pool struct {
	n       int
	workers []*poolWorker
	// state publishes a job: generation << 16 | number of parts. Workers
	// read task, total and chunk only when their index is below the parts
	// of the generation they saw, and those stay fixed until they finish.
	state  atomic.Uint64
	done   atomic.Int32
	next   atomic.Int64 // the next chunk of the current job
	closed atomic.Bool

	task         Task
	total, chunk int

	mm    matmulTask // MatMul's task, reused
	gm    gemmTask   // MatMul's task through the broadcast GEMM, reused
	multi multiTask  // MatMuls' task, reused
	px    packedX    // its packed vectors, reused
	// gbuf is, per worker, the broadcast GEMM's dequantized block
	gbuf [][]float32
	xs   []float32 // MatMul's sums of x for the legacy kernels, reused
	q8   q8K       // MatMul's x quantized for the Q4_K and Q6_K kernels, reused
	xr   []float32 // that x rounded back to floats (many vectors), reused
	// q8src is the x p.q8 holds (n vectors of cols), so a product with
	// the same input does not quantize it again
	q8src       []float32
	q8n, q8cols int
}

type poolWorker struct {
	sleeping atomic.Bool
	wake     chan struct{}
}

// spinIters is how long an idle worker polls before parking (~tens of µs).
const spinIters = 20000

// NewPool starts a pool of n workers (n <= 0: one per CPU).
func NewPool(n int) *Pool {
	if n <= 0 {
		n = runtime.NumCPU()
	}
	n = min(n, 1024)
	p := &Pool{n: n, workers: make([]*poolWorker, n)}
	for w := 1; w < n; w++ {
		p.workers[w] = &poolWorker{wake: make(chan struct{}, 1)}
		go p.loop(w, 0) // generation 0: no job yet, even if one is posted before the goroutine runs
	}
	return p
}

// Threads is the number of workers, the caller's goroutine included.
func (p *Pool) Threads() int { return p.n }

// Close stops the workers.
func (p *Pool) Close() {
	p.closed.Store(true)
	p.state.Add(1 << 16)
	for _, w := range p.workers[1:] {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

func (p *Pool) loop(id int, seen uint64) {
	w := p.workers[id]
	for {
		s := p.state.Load()
		for i := 0; s>>16 == seen && i < spinIters; i++ {
			if i&63 == 63 {
				runtime.Gosched()
			}
			s = p.state.Load()
		}
		if s>>16 == seen {
			w.sleeping.Store(true)
			if s = p.state.Load(); s>>16 == seen {
				<-w.wake
			}
			w.sleeping.Store(false)
			continue // re-read the state; a wake-up may be stale
		}
		seen = s >> 16
		if p.closed.Load() {
			return
		}
		if id < int(s&0xffff) {
			p.work(id)
			p.done.Add(1)
		}
	}
}

// Run splits [0, n) into chunks of at least grain and runs t on them with
// up to one worker per chunk's worth of work, the caller among them. Each
// worker takes the next chunk from a shared counter until none is left,
// so a thread slowed by another tenant or a page fault does not hold the
// rest back (about four chunks per worker). Calls must not overlap: a
// pool serves one forward pass.
func (p *Pool) Run(n, grain int, t Task) {
	parts := p.n
	if grain < 1 {
		grain = 1
	}
	if m := (n + grain - 1) / grain; m < parts {
		parts = m
	}
	if parts <= 1 {
		if n > 0 {
			t.Run(0, 0, n)
		}
		return
	}
	chunk := max(grain, (n+4*parts-1)/(4*parts))
	p.task, p.total, p.chunk = t, n, chunk
	p.next.Store(0)
	p.done.Store(0)
	gen := p.state.Load()>>16 + 1
	p.state.Store(gen<<16 | uint64(parts))
	for _, w := range p.workers[1:parts] {
		if w.sleeping.Load() {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
	p.work(0)
	for i := 0; p.done.Load() != int32(parts-1); i++ {
		if i > 1000 {
			runtime.Gosched()
		}
	}
	p.task = nil
}

// work runs chunks of the current job as worker id until none is left.
func (p *Pool) work(id int) {
	for {
		lo := int(p.next.Add(1)-1) * p.chunk
		if lo >= p.total {
			return
		}
		p.task.Run(id, lo, min(p.total, lo+p.chunk))
	}
}

// funcTask adapts a function to Task (it allocates: for tests and cold paths).
type funcTask func(worker, lo, hi int)

func (f funcTask) Run(worker, lo, hi int) { f(worker, lo, hi) }

// Parallel is Run for a function.
func (p *Pool) Parallel(n, grain int, fn func(worker, lo, hi int)) { p.Run(n, grain, funcTask(fn)) }

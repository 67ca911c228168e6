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
	"time"
)

// Task is work a Pool splits by index range. Tasks are long-lived values
// (pointers held by their owner), so dispatching one allocates nothing.
type Task interface {
	Run(worker, lo, hi int)
}

// Pool runs data-parallel work on a fixed set of goroutines. A decode step
// dispatches dozens of small jobs, so an idle worker spins (with the CPU's
// pause hint) for a while before parking: a parked goroutine costs a futex
// wake-up (several microseconds) per job. A worker counts that while from
// the last job it helped with, so jobs too small to need it do not keep it
// spinning, and many-core hosts are not kept busy by idle threads.
//
// A job is cut into chunks, and each worker is given a run of them in a
// row: it claims them from the front, so the rows a kernel fetches ahead
// of the one it multiplies are the rows it takes next, and once its own
// are gone it takes others' from the back. The caller waits for the
// chunks, not for every worker, so a worker the OS has not scheduled yet
// holds nothing back: the others take its chunks, and it finds the job
// gone and takes nothing.
type Pool struct {
	n       int
	workers []*poolWorker
	// oversubscribed: more workers than Go runs at once (GOMAXPROCS), so
	// a spinning goroutine must yield to let a working one run
	oversubscribed bool
	// state publishes a job: generation << 16 | number of parts. Workers
	// whose index is below the parts help with it.
	state atomic.Uint64
	// runs hands out the current job's chunks: per worker, generation (low
	// 32 bits) << 32 | first << 16 | end of the chunks left of its run. The
	// worker claims its first by advancing first, others its last by
	// lowering end, while the generation is still the job's, so a late
	// worker cannot take a chunk of a later job.
	runs     []chunkRun
	finished atomic.Int64 // chunks of the current job done
	closed   atomic.Bool

	// the current job: written by Run before it publishes the runs, read
	// by a worker only after it claimed a chunk (so no later job's Run can
	// be writing them: that waits for the chunk)
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
	q80  q80       // MatMul's x rounded to Q8_0 for the Q4_0, Q5_0 and Q8_0 kernels, reused
	xr80 []float32 // that x back in floats (many vectors), reused
	q80t q80Task
	qx   quantizeXTask
	// q8For is the x p.q8 holds (and p.xr, when xrOK; p.q8.lay, when
	// layOK). It is trusted only while keepX: a MatMuls call running its
	// products one after the other, with x unchanged, quantizes it once
	q8For              *float32
	q8n, q8cols        int
	xrOK, layOK, keepX bool
	// run is the most vectors one sequence brings to the products that
	// follow (SetRun; 0: as many as each product has)
	run int
}

// SetRun tells the products that follow that no sequence brings more
// than n of their vectors (a decode step: 1; a prompt chunk: its length;
// 0: unknown). Where the int8 kernels would take a batch but lose to
// decoded rows on one sequence's long chunk, the choice then follows the
// sequence, so a chunk takes the same path alone and in a batch.
func (p *Pool) SetRun(n int) { p.run = n }

// chunkRun is one worker's run of chunks, a cache line to itself.
type chunkRun struct {
	atomic.Uint64
	_ [56]byte
}

type poolWorker struct {
	sleeping atomic.Bool
	wake     chan struct{}
}

// spinFor is how long a worker polls for a job after its last one before
// parking. Decode steps post a job every few microseconds, and a worker
// only some jobs need (the widest products) sees one every token, so
// within a pass none parks; an idle server parks every worker within
// this.
const spinFor = time.Millisecond

// yieldEvery is how often a spinning worker lets other goroutines (the web
// server's) run on its CPU when the pool has no more workers than CPUs;
// rarely, because each yield takes the scheduler's global lock.
const yieldEvery = 200 * time.Microsecond

// chunksPerPart is how many chunks a job is cut into per worker, so that
// a worker slowed by another tenant or a page fault does not hold the
// rest back.
const chunksPerPart = 4

// NewPool starts a pool of n workers (n <= 0: DefaultThreads).
func NewPool(n int) *Pool {
	if n <= 0 {
		n = DefaultThreads()
	}
	n = min(n, 1024) // chunksPerPart × 1024 chunks fit a run's 16 bits
	p := &Pool{n: n, workers: make([]*poolWorker, n), runs: make([]chunkRun, n), oversubscribed: n > runtime.GOMAXPROCS(0)}
	for w := 1; w < n; w++ {
		p.workers[w] = &poolWorker{wake: make(chan struct{}, 1)}
		go p.loop(w)
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

// loop is worker id's life: wait for a job that needs it, help, repeat.
func (p *Pool) loop(id int) {
	w := p.workers[id]
	var seen uint64 // generation 0: no job yet, even if one is posted before this runs
	idle := time.Now()
	yielded := idle
	for spins := 1; ; spins++ {
		s := p.state.Load()
		if g := s >> 16; g != seen {
			seen = g
			if p.closed.Load() {
				return
			}
			if parts := int(s & 0xffff); id < parts {
				p.work(id, uint32(g), parts)
				idle = time.Now()
			}
			continue
		}
		if spins&255 != 0 {
			pause()
			continue
		}
		now := time.Now()
		if p.oversubscribed || now.Sub(yielded) > yieldEvery {
			runtime.Gosched()
			yielded = now
		}
		if now.Sub(idle) < spinFor {
			continue
		}
		w.sleeping.Store(true)
		if p.state.Load()>>16 == seen { // Run stores state, then reads sleeping
			<-w.wake
		}
		w.sleeping.Store(false)
		idle = time.Now() // a wake-up may be stale: the loop re-reads the state
	}
}

// Run splits [0, n) into chunks of at least grain and runs t on them with
// up to one worker per chunk's worth of work, the caller among them.
// Each worker takes a run of about four chunks in a row, then helps with
// the others' until none is left. Calls must not overlap: a pool serves
// one forward pass.
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
	chunk := max(grain, (n+chunksPerPart*parts-1)/(chunksPerPart*parts))
	chunks := (n + chunk - 1) / chunk
	p.task, p.total, p.chunk = t, n, chunk
	p.finished.Store(0)
	gen := p.state.Load()>>16 + 1
	for w := range parts {
		first, end := w*chunks/parts, (w+1)*chunks/parts
		p.runs[w].Store(uint64(uint32(gen))<<32 | uint64(first)<<16 | uint64(end))
	}
	p.state.Store(gen<<16 | uint64(parts))
	for _, w := range p.workers[1:parts] {
		if w.sleeping.Load() {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
	p.work(0, uint32(gen), parts)
	// wait for the chunks others hold; yield now and then, so a worker
	// just woken (queued to run on this goroutine's CPU) runs
	for i := 1; p.finished.Load() != int64(chunks); i++ {
		if i&1023 == 0 || p.oversubscribed && i&63 == 0 {
			runtime.Gosched()
		} else {
			pause()
		}
	}
	p.task = nil
}

// work claims and runs chunks of job gen (of parts workers) as worker id
// until none is left: its own run's from the front, then the others'
// from the back. It counts what it ran into p.finished.
func (p *Pool) work(id int, gen uint32, parts int) {
	done := 0
	for c := p.claim(id, gen, true); c >= 0; c = p.claim(id, gen, true) {
		p.runChunk(id, c)
		done++
	}
	for i := 1; i < parts; i++ {
		w := (id + i) % parts
		for c := p.claim(w, gen, false); c >= 0; c = p.claim(w, gen, false) {
			p.runChunk(id, c)
			done++
		}
	}
	if done > 0 {
		p.finished.Add(int64(done))
	}
}

// claim takes the first chunk left of worker w's run (front), or its
// last, while the run is job gen's; -1 when none is left.
func (p *Pool) claim(w int, gen uint32, front bool) int {
	r := &p.runs[w]
	for {
		t := r.Load()
		first, end := uint16(t>>16), uint16(t)
		if uint32(t>>32) != gen || first >= end {
			return -1
		}
		if front && r.CompareAndSwap(t, t+1<<16) {
			return int(first)
		}
		if !front && r.CompareAndSwap(t, t-1) {
			return int(end - 1)
		}
	}
}

// runChunk runs chunk c of the current job as worker id.
func (p *Pool) runChunk(id, c int) {
	lo := c * p.chunk
	p.task.Run(id, lo, min(p.total, lo+p.chunk))
}

// funcTask adapts a function to Task (it allocates: for tests and cold paths).
type funcTask func(worker, lo, hi int)

func (f funcTask) Run(worker, lo, hi int) { f(worker, lo, hi) }

// Parallel is Run for a function.
func (p *Pool) Parallel(n, grain int, fn func(worker, lo, hi int)) { p.Run(n, grain, funcTask(fn)) }

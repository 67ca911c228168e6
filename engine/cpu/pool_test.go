package cpu

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"
)

// coverTask records which indices ran and checks that no worker index is
// used by two goroutines at once (kernels keep per-worker scratch).
type coverTask struct {
	t     *testing.T
	hits  []atomic.Int32
	inUse []atomic.Bool
}

func (c *coverTask) Run(worker, lo, hi int) {
	if worker < 0 || worker >= len(c.inUse) {
		c.t.Errorf("worker %d of %d", worker, len(c.inUse))
		return
	}
	if !c.inUse[worker].CompareAndSwap(false, true) {
		c.t.Errorf("worker %d runs two chunks at once", worker)
	}
	for i := lo; i < hi; i++ {
		c.hits[i].Add(1)
	}
	c.inUse[worker].Store(false)
}

// Every index of every job runs exactly once, for pools smaller and (on
// small machines) larger than the CPUs, with jobs back to back so late
// workers meet later jobs.
func TestPoolRunCoversEachIndexOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 16} {
		p := NewPool(threads)
		for _, n := range []int{0, 1, 7, 100, 1000, 100_003} {
			for _, grain := range []int{0, 1, 16, 1000} {
				task := &coverTask{t: t, hits: make([]atomic.Int32, n), inUse: make([]atomic.Bool, threads)}
				const jobs = 20
				for range jobs {
					p.Run(n, grain, task)
				}
				for i := range task.hits {
					if h := task.hits[i].Load(); h != jobs {
						t.Fatalf("threads %d, n %d, grain %d: index %d ran %d times in %d jobs", threads, n, grain, i, h, jobs)
					}
				}
			}
		}
		p.Close()
	}
}

// slowTask's worker 1 is held up on every chunk it takes; the chunks each
// worker ran are counted.
type slowTask struct{ ran [2]atomic.Int32 }

func (s *slowTask) Run(worker, lo, hi int) {
	if worker == 1 {
		time.Sleep(200 * time.Millisecond)
	}
	s.ran[worker].Add(1)
}

// A worker held up in its first chunk holds nothing else back: the caller
// runs its own run of chunks and then the rest of the slow worker's.
func TestPoolTakesASlowWorkersChunks(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	p.Parallel(64, 1, func(int, int, int) {}) // the worker is up and polling
	task := &slowTask{}
	p.Run(8, 1, task)
	if caller, slow := task.ran[0].Load(), task.ran[1].Load(); caller < 7 || caller+slow != 8 {
		t.Errorf("the caller ran %d chunks and the slow worker %d: want at least 7 of 8 by the caller", caller, slow)
	}
}

// Idle workers park within spinFor of their last job, a job wakes the
// ones it needs, and Close ends them all.
func TestPoolParksAndCloses(t *testing.T) {
	before := runtime.NumGoroutine()
	p := NewPool(4)
	task := &coverTask{t: t, hits: make([]atomic.Int32, 4096), inUse: make([]atomic.Bool, 4)}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after 5 s: %s", what)
			}
		}
	}
	allParked := func() bool {
		for _, w := range p.workers[1:] {
			if !w.sleeping.Load() {
				return false
			}
		}
		return true
	}
	for round := range 3 {
		p.Run(4096, 1, task)
		waitFor("the idle workers have not parked", allParked)
		for i := range task.hits {
			if h := task.hits[i].Load(); h != int32(round+1) {
				t.Fatalf("round %d: index %d ran %d times", round, i, h)
			}
		}
	}
	p.Close()
	waitFor("the workers have not ended", func() bool { return runtime.NumGoroutine() <= before })
}

// countCores counts distinct sibling lists, and gives up (0) when a CPU
// has no topology entry.
func TestCountCores(t *testing.T) {
	sys := fstest.MapFS{}
	set := func(cpu, siblings string) {
		sys["cpu"+cpu+"/topology/thread_siblings_list"] = &fstest.MapFile{Data: []byte(siblings + "\n")}
	}
	// 4 cores with two threads each (0/4, 1/5, 2/6, 3/7), and cpu 12-13 as one core's range
	for c, s := range []string{"0,4", "1,5", "2,6", "3,7", "0,4", "1,5", "2,6", "3,7"} {
		set(strconv.Itoa(c), s)
	}
	set("12", "12-13")
	set("13", "12-13")
	for _, tc := range []struct {
		cpus []int
		want int
	}{
		{[]int{0, 1, 2, 3, 4, 5, 6, 7}, 4},
		{[]int{0, 4}, 1},
		{[]int{0, 1}, 2},
		{[]int{12, 13, 3}, 2},
		{[]int{0, 9}, 0}, // cpu9 has no entry
		{nil, 0},
	} {
		if got := countCores(sys, tc.cpus); got != tc.want {
			t.Errorf("countCores(%v) = %d, want %d", tc.cpus, got, tc.want)
		}
	}
	if n := DefaultThreads(); n < 1 || n > runtime.GOMAXPROCS(0) {
		t.Errorf("DefaultThreads() = %d, GOMAXPROCS %d", n, runtime.GOMAXPROCS(0))
	}
}

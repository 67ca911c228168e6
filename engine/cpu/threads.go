package cpu

import (
	"io/fs"
	"runtime"
	"strconv"
	"strings"
)

// DefaultThreads is the worker count NewPool(0) uses: one per physical
// core the process may run on, at most GOMAXPROCS. A core's second
// hardware thread shares its vector units and memory pipeline, so it adds
// little to these kernels and costs a share of every join.
func DefaultThreads() int {
	n := runtime.GOMAXPROCS(0)
	if c := physicalCores(); c > 0 && c < n {
		n = c
	}
	return max(n, 1)
}

// countCores counts the distinct cores among cpus, reading each one's
// siblings (the logical CPUs of its core, e.g. "0,64" or "4-5") from
// cpuN/topology/thread_siblings_list in sys, Linux's
// /sys/devices/system/cpu. It returns 0 when a CPU's entry is missing or
// unreadable, so the caller falls back to the logical count.
func countCores(sys fs.FS, cpus []int) int {
	cores := make(map[string]bool, len(cpus))
	for _, c := range cpus {
		b, err := fs.ReadFile(sys, "cpu"+strconv.Itoa(c)+"/topology/thread_siblings_list")
		if err != nil {
			return 0
		}
		cores[strings.TrimSpace(string(b))] = true
	}
	return len(cores)
}

package cpu

import (
	"os"

	"golang.org/x/sys/unix"
)

// physicalCores counts the cores among the CPUs this process may run on
// (its affinity mask), or returns 0 when that cannot be read.
func physicalCores() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0
	}
	var cpus []int
	for c, n := 0, set.Count(); c < 1<<16 && len(cpus) < n; c++ { // IsSet is false past the mask
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return countCores(os.DirFS("/sys/devices/system/cpu"), cpus)
}

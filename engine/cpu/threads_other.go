//go:build !linux

package cpu

// physicalCores is unknown off Linux: DefaultThreads uses GOMAXPROCS.
func physicalCores() int { return 0 }

//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package hfhub

import (
	"os"
	"syscall"
)

// lock takes an exclusive advisory lock on a partial download, released
// when the file is closed (or the process ends): two pulls of one file
// never write it at once.
func lock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

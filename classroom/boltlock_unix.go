//go:build !windows && !plan9 && !solaris && !aix && !android

package classroom

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockFile takes f's exclusive lock (flock, as bbolt does), waiting up to
// wait for another process to let go; errInUse when it does not. bbolt's
// own lock on the same file then finds it held already, so the file can
// be checked before bbolt reads it with no other writer changing it.
func lockFile(f *os.File, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return err
		case time.Now().After(deadline):
			return errInUse
		}
		time.Sleep(50 * time.Millisecond)
	}
}

//go:build unix

package gguf

import (
	"fmt"
	"os"
	"syscall"
)

// Open memory-maps the file at path and parses it. Call Close when done.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size == 0 {
		return nil, fmt.Errorf("%s: %w", path, ErrNotGGUF)
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("%s: file too large to map", path)
	}
	data, err := syscall.Mmap(int(fh.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	f, err := Parse(data)
	if err != nil {
		syscall.Munmap(data)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.release = func() error { return syscall.Munmap(data) }
	return f, nil
}

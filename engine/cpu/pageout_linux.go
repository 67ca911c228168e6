package cpu

import (
	"os"
	"syscall"
	"unsafe"
)

// madvPageout is Linux's MADV_PAGEOUT (5.4 on): reclaim these pages now.
// The syscall package predates it.
const madvPageout = 21

// pageOut tells the OS that b's whole pages will not be read for a while
// (a matrix's bytes once the kernels read its tiled copy): pages mapped
// from a file leave the process's memory and are read back from the file
// if something does read them; anonymous pages may go to swap. Only a
// hint: older kernels refuse it, and nothing changes but memory.
func pageOut(b []byte) {
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo, hi := (start+page-1)&^(page-1), (start+uintptr(len(b)))&^(page-1)
	if len(b) == 0 || hi <= lo {
		return
	}
	first := unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), lo-start)
	_ = syscall.Madvise(unsafe.Slice((*byte)(first), hi-lo), madvPageout)
}

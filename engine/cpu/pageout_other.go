//go:build !linux

package cpu

// pageOut has nothing to ask of this OS: a matrix's bytes stay mapped
// beside its tiled copy until the OS needs the memory.
func pageOut([]byte) {}

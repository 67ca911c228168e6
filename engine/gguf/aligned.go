package gguf

import "unsafe"

// CacheLine is where the CPU kernels want tensor data to start: their
// widest loads are 64 bytes, and a tensor starting mid-line splits every
// one of them across two lines.
const CacheLine = 64

// ParseAligned is Parse over data, or over a copy of it whose tensor data
// starts on a CacheLine boundary when data's does not. A file in memory
// lands wherever it was put: a Go-embedded model wherever the linker
// placed it (32 bytes past a line in some builds, which slowed the lesson
// model's F32 decode by 10–15 %), a converted one wherever its buffer
// grew to. A file on disk is mapped from a page boundary, so there the
// file's own data offset decides, and Open does not copy.
func ParseAligned(data []byte) (*File, error) {
	f, err := Parse(data)
	if err != nil || len(data) == 0 || lineOffset(data, f.DataOffset) == 0 {
		return f, err
	}
	buf := make([]byte, len(data)+CacheLine)
	skip := (CacheLine - lineOffset(buf, f.DataOffset)) % CacheLine
	buf = buf[skip : skip+len(data)]
	copy(buf, data)
	return Parse(buf)
}

// lineOffset is how far past a cache line's start data[off] lies.
func lineOffset(data []byte, off int64) int {
	return int((uintptr(unsafe.Pointer(unsafe.SliceData(data))) + uintptr(off)) % CacheLine)
}

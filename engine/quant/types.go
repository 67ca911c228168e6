// Package quant knows the ggml tensor types: their ids, block layouts and
// sizes, and how to turn their bytes into float32 values and back.
//
// Every dequantizer here is the plain reference loop for its block format
// (see ggml-common.h and ggml-quants.c for the layouts); the fast kernels in
// engine/cpu are tested against these loops.
package quant

import "fmt"

// Type is a ggml tensor type id as stored in GGUF tensor infos.
type Type uint32

// The tensor types this engine understands. Ids match ggml.h.
const (
	F32  Type = 0
	F16  Type = 1
	Q4_0 Type = 2
	Q4_1 Type = 3
	Q5_0 Type = 6
	Q5_1 Type = 7
	Q8_0 Type = 8
	Q4_K Type = 12
	Q5_K Type = 13
	Q6_K Type = 14
	BF16 Type = 30
)

type typeInfo struct {
	name       string
	blockElems int // elements per block
	blockBytes int // bytes per block
}

var types = map[Type]typeInfo{
	F32:  {"F32", 1, 4},
	F16:  {"F16", 1, 2},
	BF16: {"BF16", 1, 2},
	Q4_0: {"Q4_0", 32, 18},
	Q4_1: {"Q4_1", 32, 20},
	Q5_0: {"Q5_0", 32, 22},
	Q5_1: {"Q5_1", 32, 24},
	Q8_0: {"Q8_0", 32, 34},
	Q4_K: {"Q4_K", 256, 144},
	Q5_K: {"Q5_K", 256, 176},
	Q6_K: {"Q6_K", 256, 210},
}

// Known reports whether t is a type this engine can load.
func (t Type) Known() bool { _, ok := types[t]; return ok }

// String returns ggml's name for the type, or "type(N)" when unknown.
func (t Type) String() string {
	if ti, ok := types[t]; ok {
		return ti.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockElems is the number of elements in one block (1 for float types).
// It is 0 for unknown types.
func (t Type) BlockElems() int { return types[t].blockElems }

// BlockBytes is the size in bytes of one block. It is 0 for unknown types.
func (t Type) BlockBytes() int { return types[t].blockBytes }

// RowBytes is the byte size of a row of n elements, or an error when n is
// not a whole number of blocks or the type is unknown.
func (t Type) RowBytes(n int) (int, error) {
	ti, ok := types[t]
	if !ok {
		return 0, fmt.Errorf("unknown tensor type %d", uint32(t))
	}
	if n < 0 || n%ti.blockElems != 0 {
		return 0, fmt.Errorf("%s row of %d elements is not a whole number of %d-element blocks", ti.name, n, ti.blockElems)
	}
	return n / ti.blockElems * ti.blockBytes, nil
}

// ParseType maps a name such as "q8_0" or "F16" to its Type.
func ParseType(name string) (Type, error) {
	for t, ti := range types {
		if equalFold(ti.name, name) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown tensor type %q", name)
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

package gguf

import (
	"bytes"
	"testing"
)

// Wherever a file lies in memory, ParseAligned reads it with its tensor
// data on a cache line and the same bytes in every tensor; a file already
// there is read in place.
func TestParseAligned(t *testing.T) {
	file := fixture(t)
	want, err := Parse(file)
	if err != nil {
		t.Fatal(err)
	}
	backing := make([]byte, len(file)+2*CacheLine)
	for shift := range CacheLine {
		data := backing[shift : shift+len(file)]
		copy(data, file)
		f, err := ParseAligned(data)
		if err != nil {
			t.Fatalf("shift %d: %v", shift, err)
		}
		if got := lineOffset(f.data, f.DataOffset); got != 0 {
			t.Errorf("shift %d: the tensor data starts %d bytes past a line", shift, got)
		}
		inPlace := &f.data[0] == &data[0]
		if wantInPlace := lineOffset(data, f.DataOffset) == 0; inPlace != wantInPlace {
			t.Errorf("shift %d: read in place %v, want %v", shift, inPlace, wantInPlace)
		}
		for i := range want.Tensors {
			if !bytes.Equal(f.TensorData(&f.Tensors[i]), want.TensorData(&want.Tensors[i])) {
				t.Errorf("shift %d: tensor %s differs", shift, f.Tensors[i].Name)
			}
		}
	}
	if _, err := ParseAligned([]byte("GGUF")); err == nil {
		t.Error("a truncated file read")
	}
}

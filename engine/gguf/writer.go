package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"stepthrough/engine/quant"
)

// Writer builds a GGUF version 3 file. Metadata keys keep the order in
// which they were first set; tensors are laid out in the order added.
type Writer struct {
	kv      []KV
	tensors []TensorInfo
	data    [][]byte
}

// NewWriter returns an empty writer.
func NewWriter() *Writer { return &Writer{} }

// Set stores a metadata value (see ValueOf for the accepted Go types),
// replacing any earlier value under the same key.
func (w *Writer) Set(key string, v any) error {
	if key == "" || len(key) > maxKeyLen {
		return fmt.Errorf("gguf writer: invalid key %q", key)
	}
	val, err := ValueOf(v)
	if err != nil {
		return fmt.Errorf("gguf writer: key %q: %w", key, err)
	}
	if key == "general.alignment" {
		a, ok := v.(uint32)
		if !ok || a == 0 || a&(a-1) != 0 || a > maxAlignment {
			return fmt.Errorf("gguf writer: general.alignment must be a power-of-two u32 up to %d", maxAlignment)
		}
	}
	for i := range w.kv {
		if w.kv[i].Key == key {
			w.kv[i].Value = val
			return nil
		}
	}
	w.kv = append(w.kv, KV{Key: key, Value: val})
	return nil
}

// SetValue stores a metadata value read from another file as it is.
func (w *Writer) SetValue(key string, v Value) {
	for i := range w.kv {
		if w.kv[i].Key == key {
			w.kv[i].Value = v
			return
		}
	}
	w.kv = append(w.kv, KV{Key: key, Value: v})
}

// MustSet is Set for values known to be valid; it panics on a programming error.
func (w *Writer) MustSet(key string, v any) {
	if err := w.Set(key, v); err != nil {
		panic(err)
	}
}

// AddTensor adds a tensor with dims in ggml order (dims[0] innermost).
// data must be exactly the encoded bytes of the tensor.
func (w *Writer) AddTensor(name string, typ quant.Type, dims []uint64, data []byte) error {
	if name == "" || len(name) > maxTensorName {
		return fmt.Errorf("gguf writer: invalid tensor name %q", name)
	}
	for _, t := range w.tensors {
		if t.Name == name {
			return fmt.Errorf("gguf writer: duplicate tensor %q", name)
		}
	}
	if len(dims) == 0 || len(dims) > maxDims {
		return fmt.Errorf("gguf writer: tensor %q has %d dimensions", name, len(dims))
	}
	n := uint64(1)
	for _, d := range dims {
		n *= d
	}
	rb, err := typ.RowBytes(int(dims[0]))
	if err != nil {
		return fmt.Errorf("gguf writer: tensor %q: %w", name, err)
	}
	if want := uint64(rb) * (n / dims[0]); dims[0] != 0 && uint64(len(data)) != want {
		return fmt.Errorf("gguf writer: tensor %q: %s %v needs %d bytes, got %d", name, typ, dims, want, len(data))
	}
	w.tensors = append(w.tensors, TensorInfo{Name: name, Type: typ, Dims: slices.Clone(dims), Size: uint64(len(data))})
	w.data = append(w.data, data)
	return nil
}

// AddF32 quantizes values to typ and adds them as a tensor.
func (w *Writer) AddF32(name string, typ quant.Type, dims []uint64, values []float32) error {
	b, err := quant.Quantize(typ, values)
	if err != nil {
		return fmt.Errorf("gguf writer: tensor %q: %w", name, err)
	}
	return w.AddTensor(name, typ, dims, b)
}

func (w *Writer) alignment() uint64 {
	for _, kv := range w.kv {
		if kv.Key == "general.alignment" {
			return uint64(kv.Value.V.(uint32))
		}
	}
	return DefaultAlignment
}

// WriteTo writes the file.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	cw := &countWriter{w: bufio.NewWriterSize(out, 1<<20)}
	align := w.alignment()
	cw.bytes([]byte(Magic))
	cw.u32(3)
	cw.u64(uint64(len(w.tensors)))
	cw.u64(uint64(len(w.kv)))
	for _, kv := range w.kv {
		cw.str(kv.Key)
		cw.value(kv.Value)
	}
	off := uint64(0)
	for i := range w.tensors {
		t := &w.tensors[i]
		t.Offset = off
		cw.str(t.Name)
		cw.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			cw.u64(d)
		}
		cw.u32(uint32(t.Type))
		cw.u64(t.Offset)
		off = alignUp(off+t.Size, align)
	}
	if len(w.tensors) > 0 {
		cw.pad(align)
		for _, d := range w.data {
			cw.bytes(d)
			cw.pad(align)
		}
	}
	if cw.err == nil {
		cw.err = cw.w.(*bufio.Writer).Flush()
	}
	return cw.n, cw.err
}

// WriteFile writes the file to path.
func (w *Writer) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// Bytes returns the encoded file.
func (w *Writer) Bytes() []byte {
	var b sliceWriter
	w.WriteTo(&b)
	return b
}

type sliceWriter []byte

func (s *sliceWriter) Write(p []byte) (int, error) { *s = append(*s, p...); return len(p), nil }

type countWriter struct {
	w   io.Writer
	n   int64
	err error
	buf [8]byte
}

func (c *countWriter) bytes(b []byte) {
	if c.err != nil {
		return
	}
	var n int
	n, c.err = c.w.Write(b)
	c.n += int64(n)
}

func (c *countWriter) u8(v uint8)   { c.bytes([]byte{v}) }
func (c *countWriter) u16(v uint16) { binary.LittleEndian.PutUint16(c.buf[:], v); c.bytes(c.buf[:2]) }
func (c *countWriter) u32(v uint32) { binary.LittleEndian.PutUint32(c.buf[:], v); c.bytes(c.buf[:4]) }
func (c *countWriter) u64(v uint64) { binary.LittleEndian.PutUint64(c.buf[:], v); c.bytes(c.buf[:8]) }
func (c *countWriter) str(s string) { c.u64(uint64(len(s))); c.bytes([]byte(s)) }
func (c *countWriter) pad(a uint64) {
	if n := alignUp(uint64(c.n), a) - uint64(c.n); n > 0 {
		c.bytes(make([]byte, n))
	}
}

func (c *countWriter) value(v Value) {
	c.u32(uint32(v.Type))
	if v.Type == TypeArray {
		c.array(v.V.(Array))
		return
	}
	c.scalar(v.V)
}

func (c *countWriter) scalar(v any) {
	switch x := v.(type) {
	case uint8:
		c.u8(x)
	case int8:
		c.u8(uint8(x))
	case uint16:
		c.u16(x)
	case int16:
		c.u16(uint16(x))
	case uint32:
		c.u32(x)
	case int32:
		c.u32(uint32(x))
	case float32:
		c.u32(math.Float32bits(x))
	case bool:
		if x {
			c.u8(1)
		} else {
			c.u8(0)
		}
	case string:
		c.str(x)
	case uint64:
		c.u64(x)
	case int64:
		c.u64(uint64(x))
	case float64:
		c.u64(math.Float64bits(x))
	}
}

func (c *countWriter) array(a Array) {
	c.u32(uint32(a.Elem))
	c.u64(uint64(a.Len()))
	switch d := a.Data.(type) {
	case []Array:
		for _, x := range d {
			c.array(x)
		}
	case []uint8:
		c.bytes(d)
	default:
		eachElem(a.Data, c.scalar)
	}
}

func eachElem(data any, f func(any)) {
	switch d := data.(type) {
	case []int8:
		for _, x := range d {
			f(x)
		}
	case []uint16:
		for _, x := range d {
			f(x)
		}
	case []int16:
		for _, x := range d {
			f(x)
		}
	case []uint32:
		for _, x := range d {
			f(x)
		}
	case []int32:
		for _, x := range d {
			f(x)
		}
	case []float32:
		for _, x := range d {
			f(x)
		}
	case []bool:
		for _, x := range d {
			f(x)
		}
	case []string:
		for _, x := range d {
			f(x)
		}
	case []uint64:
		for _, x := range d {
			f(x)
		}
	case []int64:
		for _, x := range d {
			f(x)
		}
	case []float64:
		for _, x := range d {
			f(x)
		}
	}
}

// Package gguf reads and writes GGUF model files (versions 2 and 3).
//
// # Security
//
// A model file is untrusted input. The reader checks every count, length,
// dimension and offset against the bytes that remain in the file and against
// fixed caps before it allocates anything, rejects unknown types, duplicate
// keys and tensor names, misaligned, out-of-range and overlapping tensors, and
// reports each problem as a *FormatError carrying the byte offset where it
// was found. It never panics on malformed input (see FuzzParse).
//
// Files are memory-mapped where the platform allows, so tensor data is never
// copied: TensorData returns a slice of the mapping, valid until Close.
// ParseHeader reads what a file holds from its first bytes alone (a
// download checked before it is fetched), allocating no more than those
// bytes can fill.
package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"unicode/utf8"

	"stepthrough/engine/quant"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment applies when general.alignment is absent.
const DefaultAlignment = 32

// Caps on what a file may declare. They are far above any real model and
// keep a hostile header from asking for absurd allocations.
const (
	maxKeyLen      = 65535
	maxStringLen   = 64 << 20
	maxTensorName  = 256
	maxCount       = 1 << 24
	maxArrayDepth  = 8
	maxDims        = 4
	maxElements    = 1 << 48
	maxAlignment   = 1 << 16
	minKVBytes     = 8 + 1 + 4 + 1 // key length, 1-byte key, type, 1-byte value
	minTensorBytes = 8 + 1 + 4 + 8 + 4 + 8
)

// ErrNotGGUF means the data does not start with the GGUF magic.
var ErrNotGGUF = errors.New("gguf: not a GGUF file (bad magic)")

// ErrShortHeader means the bytes given to ParseHeader end before the
// file's metadata and tensor infos do: read more of the file and parse
// again.
var ErrShortHeader = errors.New("gguf: the header goes on past the bytes read")

// FormatError describes malformed GGUF data at a byte offset.
type FormatError struct {
	Off int64  // byte offset in the file where the problem was found
	Msg string // what was wrong
}

func (e *FormatError) Error() string { return fmt.Sprintf("gguf: at byte %d: %s", e.Off, e.Msg) }

// KV is one metadata key/value pair.
type KV struct {
	Key    string
	Value  Value
	Offset int64 // where the pair starts in the file
}

// TensorInfo describes one tensor. Dims are in ggml order: Dims[0] is the
// contiguous (innermost) dimension.
type TensorInfo struct {
	Name   string
	Type   quant.Type
	Dims   []uint64
	Offset uint64 // relative to the start of the data section
	Size   uint64 // bytes
}

// Elements is the number of elements in the tensor.
func (t *TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// File is a parsed GGUF file.
type File struct {
	Version    uint32
	KV         []KV // in file order
	Tensors    []TensorInfo
	Alignment  uint64
	DataOffset int64 // absolute offset of the tensor data section

	kvIndex     map[string]int
	tensorIndex map[string]int
	data        []byte
	release     func() error
}

// Parse parses a whole GGUF file held in memory. Tensor data slices refer
// into data.
func Parse(data []byte) (*File, error) {
	p := &parser{data: data, size: int64(len(data))}
	f, err := p.file()
	if err != nil {
		return nil, err
	}
	f.data = data
	return f, nil
}

// ParseHeader parses the metadata and tensor infos of a GGUF file of size
// bytes from its first bytes, head; the tensor data need not be there. It
// checks what Parse checks, tensor offsets and sizes against size, so a
// file can be judged before the rest of it is fetched. When head ends
// before the tensor infos do, the error wraps ErrShortHeader. The File
// holds no tensor data: TensorData returns nil.
func ParseHeader(head []byte, size int64) (*File, error) {
	if size < int64(len(head)) {
		return nil, fmt.Errorf("gguf: %d bytes read of a file of %d", len(head), size)
	}
	p := &parser{data: head, size: size}
	return p.file()
}

// Close releases the file's memory mapping, if any. Tensor data obtained
// from the file must not be used afterwards.
func (f *File) Close() error {
	if f.release == nil {
		return nil
	}
	err := f.release()
	f.release, f.data = nil, nil
	return err
}

// Get returns the value stored under key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// Tensor returns the info of the named tensor.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns the bytes of t (a slice of the file, not a copy), or
// nil for a File from ParseHeader.
func (f *File) TensorData(t *TensorInfo) []byte {
	if f.data == nil {
		return nil
	}
	start := uint64(f.DataOffset) + t.Offset
	return f.data[start : start+t.Size : start+t.Size]
}

type parser struct {
	data []byte // the bytes read: the whole file, or its head (ParseHeader)
	size int64  // the whole file's length
	off  int64
}

func (p *parser) errf(off int64, format string, args ...any) error {
	return &FormatError{Off: off, Msg: fmt.Sprintf(format, args...)}
}

// remaining is the bytes read that follow the offset; left, the bytes of
// the file (ParseHeader: some may not have been read).
func (p *parser) remaining() int64 { return int64(len(p.data)) - p.off }
func (p *parser) left() int64      { return p.size - p.off }

// need checks that n bytes follow in the file and were read.
func (p *parser) need(n int64, what string) error {
	if n < 0 || p.left() < n {
		return p.errf(p.off, "file ends inside %s (needs %d bytes, %d left)", what, n, p.left())
	}
	if p.remaining() < n {
		return fmt.Errorf("%w: %s at byte %d needs %d bytes, %d read", ErrShortHeader, what, p.off, n, p.remaining())
	}
	return nil
}

// capacity bounds a slice's initial capacity by what the bytes read can
// fill (ParseHeader may be given a head much shorter than the file).
func (p *parser) capacity(n uint64, minBytes int64) int {
	return int(min(n, uint64(max(p.remaining(), 0)/minBytes)))
}

func (p *parser) u8(what string) (uint8, error) {
	if err := p.need(1, what); err != nil {
		return 0, err
	}
	v := p.data[p.off]
	p.off++
	return v, nil
}

func (p *parser) u16(what string) (uint16, error) {
	if err := p.need(2, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint16(p.data[p.off:])
	p.off += 2
	return v, nil
}

func (p *parser) u32(what string) (uint32, error) {
	if err := p.need(4, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(p.data[p.off:])
	p.off += 4
	return v, nil
}

func (p *parser) u64(what string) (uint64, error) {
	if err := p.need(8, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(p.data[p.off:])
	p.off += 8
	return v, nil
}

func (p *parser) str(what string, maxLen uint64) (string, error) {
	at := p.off
	n, err := p.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > maxLen {
		return "", p.errf(at, "%s length %d exceeds the limit of %d", what, n, maxLen)
	}
	if err := p.need(int64(n), what); err != nil {
		return "", err
	}
	s := string(p.data[p.off : p.off+int64(n)])
	p.off += int64(n)
	return s, nil
}

func (p *parser) file() (*File, error) {
	if err := p.need(4, "magic"); err != nil && p.size >= 4 {
		return nil, err
	}
	if len(p.data) < 4 || string(p.data[:4]) != Magic {
		return nil, ErrNotGGUF
	}
	p.off = 4
	version, err := p.u32("version")
	if err != nil {
		return nil, err
	}
	switch {
	case version == 1:
		return nil, p.errf(4, "GGUF version 1 is not supported (versions 2 and 3 are)")
	case version&0xffff == 0 && bits.ReverseBytes32(version) <= 3:
		return nil, p.errf(4, "big-endian GGUF files are not supported")
	case version != 2 && version != 3:
		return nil, p.errf(4, "unsupported GGUF version %d (versions 2 and 3 are supported)", version)
	}
	at := p.off
	nTensors, err := p.u64("tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := p.u64("metadata count")
	if err != nil {
		return nil, err
	}
	if nTensors > maxCount || nTensors > uint64(p.left()/minTensorBytes) {
		return nil, p.errf(at, "tensor count %d cannot fit in the %d bytes that follow", nTensors, p.left())
	}
	if nKV > maxCount || nKV > uint64(p.left()/minKVBytes) {
		return nil, p.errf(at+8, "metadata count %d cannot fit in the %d bytes that follow", nKV, p.left())
	}
	f := &File{
		Version:     version,
		KV:          make([]KV, 0, p.capacity(nKV, minKVBytes)),
		kvIndex:     make(map[string]int, p.capacity(nKV, minKVBytes)),
		Tensors:     make([]TensorInfo, 0, p.capacity(nTensors, minTensorBytes)),
		tensorIndex: make(map[string]int, p.capacity(nTensors, minTensorBytes)),
		Alignment:   DefaultAlignment,
	}
	for i := uint64(0); i < nKV; i++ {
		kvAt := p.off
		key, err := p.str("metadata key", maxKeyLen)
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, p.errf(kvAt, "empty metadata key")
		}
		if !utf8.ValidString(key) {
			return nil, p.errf(kvAt, "metadata key %q is not valid UTF-8", key)
		}
		if _, dup := f.kvIndex[key]; dup {
			return nil, p.errf(kvAt, "duplicate metadata key %q", key)
		}
		v, err := p.value(key, 0)
		if err != nil {
			return nil, err
		}
		if key == "general.alignment" {
			a, ok := v.V.(uint32)
			if !ok {
				return nil, p.errf(kvAt, "general.alignment must be a u32, got %s", v.Type)
			}
			if a == 0 || a&(a-1) != 0 || a > maxAlignment {
				return nil, p.errf(kvAt, "general.alignment %d is not a power of two up to %d", a, maxAlignment)
			}
			f.Alignment = uint64(a)
		}
		f.kvIndex[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v, Offset: kvAt})
	}
	for i := uint64(0); i < nTensors; i++ {
		t, err := p.tensorInfo()
		if err != nil {
			return nil, err
		}
		if _, dup := f.tensorIndex[t.Name]; dup {
			return nil, p.errf(p.off, "duplicate tensor name %q", t.Name)
		}
		f.tensorIndex[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	end := uint64(p.off)
	if nTensors > 0 {
		end = alignUp(end, f.Alignment)
	}
	if end > uint64(p.size) {
		return nil, p.errf(p.off, "file ends before the tensor data section at byte %d", end)
	}
	f.DataOffset = int64(end)
	if err := checkTensorLayout(f, uint64(p.size)-end); err != nil {
		return nil, err
	}
	return f, nil
}

func alignUp(o, a uint64) uint64 { return o + (a-o%a)%a }

func (p *parser) tensorInfo() (TensorInfo, error) {
	at := p.off
	name, err := p.str("tensor name", maxTensorName)
	if err != nil {
		return TensorInfo{}, err
	}
	if name == "" {
		return TensorInfo{}, p.errf(at, "empty tensor name")
	}
	nDims, err := p.u32("tensor dimension count")
	if err != nil {
		return TensorInfo{}, err
	}
	if nDims == 0 || nDims > maxDims {
		return TensorInfo{}, p.errf(p.off-4, "tensor %q has %d dimensions (1 to %d allowed)", name, nDims, maxDims)
	}
	t := TensorInfo{Name: name, Dims: make([]uint64, nDims)}
	elems := uint64(1)
	for j := range t.Dims {
		d, err := p.u64("tensor dimension")
		if err != nil {
			return TensorInfo{}, err
		}
		if d > maxElements {
			return TensorInfo{}, p.errf(p.off-8, "tensor %q dimension %d is %d, beyond the limit %d", name, j, d, uint64(maxElements))
		}
		hi, lo := bits.Mul64(elems, d)
		if hi != 0 || lo > maxElements {
			return TensorInfo{}, p.errf(p.off-8, "tensor %q has too many elements", name)
		}
		elems = lo
		t.Dims[j] = d
	}
	typ, err := p.u32("tensor type")
	if err != nil {
		return TensorInfo{}, err
	}
	t.Type = quant.Type(typ)
	if !t.Type.Known() {
		return TensorInfo{}, p.errf(p.off-4, "tensor %q has unsupported type %d", name, typ)
	}
	be := uint64(t.Type.BlockElems())
	if t.Dims[0]%be != 0 {
		return TensorInfo{}, p.errf(p.off-4, "tensor %q: row length %d is not a multiple of the %s block size %d", name, t.Dims[0], t.Type, be)
	}
	t.Size = elems / be * uint64(t.Type.BlockBytes())
	if t.Offset, err = p.u64("tensor offset"); err != nil {
		return TensorInfo{}, err
	}
	return t, nil
}

// checkTensorLayout rejects misaligned, out-of-range and overlapping tensors.
func checkTensorLayout(f *File, dataLen uint64) error {
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
		t := &f.Tensors[i]
		if t.Offset%f.Alignment != 0 {
			return &FormatError{f.DataOffset, fmt.Sprintf("tensor %q offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)}
		}
		if t.Offset > dataLen || t.Size > dataLen-t.Offset {
			return &FormatError{f.DataOffset + int64(min(t.Offset, dataLen)), fmt.Sprintf("tensor %q (%d bytes at data offset %d) extends past the end of the file (%d data bytes)", t.Name, t.Size, t.Offset, dataLen)}
		}
	}
	sort.Slice(order, func(a, b int) bool { return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset })
	for k := 1; k < len(order); k++ {
		prev, cur := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if prev.Offset+prev.Size > cur.Offset {
			return &FormatError{f.DataOffset + int64(cur.Offset), fmt.Sprintf("tensor %q overlaps tensor %q", cur.Name, prev.Name)}
		}
	}
	return nil
}

func (p *parser) value(key string, depth int) (Value, error) {
	at := p.off
	t, err := p.u32("value type of " + key)
	if err != nil {
		return Value{}, err
	}
	vt := ValueType(t)
	if vt == TypeArray {
		a, err := p.array(key, depth)
		return Value{TypeArray, a}, err
	}
	if vt.fixedSize() < 0 {
		return Value{}, p.errf(at, "key %q has unknown value type %d", key, t)
	}
	v, err := p.scalar(vt, key)
	return Value{vt, v}, err
}

func (p *parser) scalar(vt ValueType, key string) (any, error) {
	switch vt {
	case TypeUint8:
		return p.u8(key)
	case TypeInt8:
		v, err := p.u8(key)
		return int8(v), err
	case TypeUint16:
		return p.u16(key)
	case TypeInt16:
		v, err := p.u16(key)
		return int16(v), err
	case TypeUint32:
		return p.u32(key)
	case TypeInt32:
		v, err := p.u32(key)
		return int32(v), err
	case TypeFloat32:
		v, err := p.u32(key)
		return math.Float32frombits(v), err
	case TypeBool:
		at := p.off
		v, err := p.u8(key)
		if err == nil && v > 1 {
			return nil, p.errf(at, "key %q: bool byte is %d (must be 0 or 1)", key, v)
		}
		return v == 1, err
	case TypeString:
		return p.str("string value of "+key, maxStringLen)
	case TypeUint64:
		return p.u64(key)
	case TypeInt64:
		v, err := p.u64(key)
		return int64(v), err
	case TypeFloat64:
		v, err := p.u64(key)
		return math.Float64frombits(v), err
	}
	return nil, p.errf(p.off, "key %q: unknown value type %d", key, vt)
}

func (p *parser) array(key string, depth int) (Array, error) {
	at := p.off
	if depth >= maxArrayDepth {
		return Array{}, p.errf(at, "key %q: arrays nested deeper than %d", key, maxArrayDepth)
	}
	et, err := p.u32("array element type of " + key)
	if err != nil {
		return Array{}, err
	}
	elem := ValueType(et)
	size := elem.fixedSize()
	if size < 0 {
		return Array{}, p.errf(at, "key %q: array of unknown element type %d", key, et)
	}
	n, err := p.u64("array length of " + key)
	if err != nil {
		return Array{}, err
	}
	minSize := int64(size)
	switch elem {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	if n > maxCount || n > uint64(p.left()/minSize) {
		return Array{}, p.errf(at+4, "key %q: array length %d cannot fit in the %d bytes left", key, n, p.left())
	}
	if size > 0 { // fixed-size elements: all of them read before any allocation
		if err := p.need(int64(n)*int64(size), "array "+key); err != nil {
			return Array{}, err
		}
	}
	a := Array{Elem: elem}
	switch elem {
	case TypeUint8:
		a.Data = readN(p, n, 1, func(b []byte) uint8 { return b[0] })
	case TypeInt8:
		a.Data = readN(p, n, 1, func(b []byte) int8 { return int8(b[0]) })
	case TypeUint16:
		a.Data = readN(p, n, 2, binary.LittleEndian.Uint16)
	case TypeInt16:
		a.Data = readN(p, n, 2, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) })
	case TypeUint32:
		a.Data = readN(p, n, 4, binary.LittleEndian.Uint32)
	case TypeInt32:
		a.Data = readN(p, n, 4, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) })
	case TypeFloat32:
		a.Data = readN(p, n, 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
	case TypeUint64:
		a.Data = readN(p, n, 8, binary.LittleEndian.Uint64)
	case TypeInt64:
		a.Data = readN(p, n, 8, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) })
	case TypeFloat64:
		a.Data = readN(p, n, 8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })
	case TypeBool:
		out := make([]bool, n)
		for i := range out {
			bAt := p.off + int64(i)
			if p.data[bAt] > 1 {
				return Array{}, p.errf(bAt, "key %q: bool byte is %d (must be 0 or 1)", key, p.data[bAt])
			}
			out[i] = p.data[bAt] == 1
		}
		p.off += int64(n)
		a.Data = out
	case TypeString:
		out := make([]string, 0, p.capacity(n, minSize))
		for range n {
			s, err := p.str("string in array "+key, maxStringLen)
			if err != nil {
				return Array{}, err
			}
			out = append(out, s)
		}
		a.Data = out
	case TypeArray:
		out := make([]Array, 0, p.capacity(n, minSize))
		for range n {
			sub, err := p.array(key, depth+1)
			if err != nil {
				return Array{}, err
			}
			out = append(out, sub)
		}
		a.Data = out
	}
	return a, nil
}

// readN decodes n fixed-size elements; the caller has checked they fit.
func readN[T any](p *parser, n uint64, size int, dec func([]byte) T) []T {
	out := make([]T, n)
	b := p.data[p.off:]
	for i := range out {
		out[i] = dec(b[i*size:])
	}
	p.off += int64(n) * int64(size)
	return out
}

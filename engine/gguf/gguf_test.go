package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"stepthrough/engine/quant"
	"stepthrough/engine/reftest"
)

// fixture builds a small file with every value type, a nested array and
// three tensors of different types.
func fixture(t testing.TB) []byte {
	w := NewWriter()
	w.MustSet("general.architecture", "llama")
	w.MustSet("general.alignment", uint32(64))
	w.MustSet("t.u8", uint8(200))
	w.MustSet("t.i8", int8(-5))
	w.MustSet("t.u16", uint16(60000))
	w.MustSet("t.i16", int16(-300))
	w.MustSet("t.u32", uint32(4000000000))
	w.MustSet("t.i32", int32(-7))
	w.MustSet("t.f32", float32(1.5))
	w.MustSet("t.bool", true)
	w.MustSet("t.string", "héllo")
	w.MustSet("t.u64", uint64(1)<<40)
	w.MustSet("t.i64", int64(-1)<<40)
	w.MustSet("t.f64", 2.25)
	w.MustSet("t.strings", []string{"a", "", "ccc"})
	w.MustSet("t.nested", []Array{{TypeInt32, []int32{1, 2}}, {TypeString, []string{"x"}}})
	w.MustSet("t.bools", []bool{true, false})
	w.MustSet("t.u8s", []uint8{1, 2, 3})
	if err := w.AddF32("a", quant.F32, []uint64{3, 2}, []float32{1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddF32("b", quant.Q8_0, []uint64{32}, make([]float32, 32)); err != nil {
		t.Fatal(err)
	}
	if err := w.AddF32("c", quant.F16, []uint64{5}, []float32{1, -1, 0.5, 0, 2}); err != nil {
		t.Fatal(err)
	}
	return w.Bytes()
}

func TestRoundTrip(t *testing.T) {
	data := fixture(t)
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"t.u8": uint8(200), "t.i8": int8(-5), "t.u16": uint16(60000), "t.i16": int16(-300),
		"t.u32": uint32(4000000000), "t.i32": int32(-7), "t.f32": float32(1.5), "t.bool": true,
		"t.string": "héllo", "t.u64": uint64(1) << 40, "t.i64": int64(-1) << 40, "t.f64": 2.25,
		"t.strings": Array{TypeString, []string{"a", "", "ccc"}},
		"t.nested":  Array{TypeArray, []Array{{TypeInt32, []int32{1, 2}}, {TypeString, []string{"x"}}}},
		"t.bools":   Array{TypeBool, []bool{true, false}},
		"t.u8s":     Array{TypeUint8, []uint8{1, 2, 3}},
	}
	for k, w := range want {
		v, ok := f.Get(k)
		if !ok {
			t.Errorf("key %s missing", k)
			continue
		}
		if !reflect.DeepEqual(v.V, w) {
			t.Errorf("key %s = %#v, want %#v", k, v.V, w)
		}
	}
	if f.Alignment != 64 || f.DataOffset%64 != 0 {
		t.Errorf("alignment %d, data offset %d", f.Alignment, f.DataOffset)
	}
	a, ok := f.Tensor("a")
	if !ok || a.Type != quant.F32 || !reflect.DeepEqual(a.Dims, []uint64{3, 2}) {
		t.Fatalf("tensor a = %+v", a)
	}
	got := make([]float32, 6)
	if err := quant.Dequantize(a.Type, f.TensorData(a), got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("tensor a data = %v", got)
	}
	for _, ti := range f.Tensors {
		if ti.Offset%64 != 0 {
			t.Errorf("tensor %s at unaligned offset %d", ti.Name, ti.Offset)
		}
	}
	// Writing what we read gives the same bytes.
	w := NewWriter()
	for _, kv := range f.KV {
		w.MustSet(kv.Key, kv.Value.V)
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, f.TensorData(ti)); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(w.Bytes(), data) {
		t.Error("rewriting a parsed file changed its bytes")
	}
}

func TestVersion2AndU64Counts(t *testing.T) {
	data := fixture(t)
	binary.LittleEndian.PutUint32(data[4:], 2)
	if f, err := Parse(data); err != nil || f.Version != 2 {
		t.Fatalf("version 2: %v", err)
	}
}

func TestOpenMapsFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.gguf")
	if err := os.WriteFile(p, fixture(t), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 3 {
		t.Errorf("%d tensors", len(f.Tensors))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.gguf")); err == nil {
		t.Error("missing file: want error")
	}
}

// Corrupted copies of a good file: each must give a clear error, never a panic.
func TestCorrupted(t *testing.T) {
	good := fixture(t)
	f, _ := Parse(good)
	kvOff := func(key string) int64 {
		for _, kv := range f.KV {
			if kv.Key == key {
				return kv.Offset
			}
		}
		t.Fatalf("no key %s", key)
		return 0
	}
	// offset of the first tensor info: after the last KV.
	tensorInfoOff := int64(0)
	{
		p := &parser{data: good, size: int64(len(good)), off: kvOff("t.u8s")}
		p.str("", maxKeyLen)
		p.value("", 0)
		tensorInfoOff = p.off
	}
	mod := func(fn func(b []byte) []byte) []byte { return fn(bytes.Clone(good)) }
	put64 := func(b []byte, off int64, v uint64) []byte { binary.LittleEndian.PutUint64(b[off:], v); return b }
	put32 := func(b []byte, off int64, v uint32) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b }
	tests := []struct {
		name, want string
		data       []byte
	}{
		{"empty", "bad magic", nil},
		{"magic", "bad magic", mod(func(b []byte) []byte { b[0] = 'X'; return b })},
		{"version1", "version 1", mod(func(b []byte) []byte { return put32(b, 4, 1) })},
		{"version9", "unsupported GGUF version 9", mod(func(b []byte) []byte { return put32(b, 4, 9) })},
		{"bigendian", "big-endian", mod(func(b []byte) []byte { return put32(b, 4, 3<<24) })},
		{"truncated header", "file ends", good[:10]},
		{"huge tensor count", "tensor count", mod(func(b []byte) []byte { return put64(b, 8, 1<<40) })},
		{"huge kv count", "metadata count", mod(func(b []byte) []byte { return put64(b, 16, 1<<40) })},
		{"huge key length", "exceeds the limit", mod(func(b []byte) []byte { return put64(b, 24, 1<<20) })},
		{"key past end", "file ends inside metadata key", mod(func(b []byte) []byte { return put64(b, 24, 60000) })},
		{"duplicate key", "duplicate metadata key", mod(func(b []byte) []byte {
			o := kvOff("t.i8")
			copy(b[o+8:], "t.u8")
			return b
		})},
		{"unknown value type", "unknown value type", mod(func(b []byte) []byte {
			o := kvOff("t.u8") + 8 + 4
			return put32(b, o, 77)
		})},
		{"bad bool", "bool byte", mod(func(b []byte) []byte {
			o := kvOff("t.bool") + 8 + 6 + 4
			b[o] = 2
			return b
		})},
		{"array too long", "cannot fit", mod(func(b []byte) []byte {
			o := kvOff("t.strings") + 8 + 9 + 4 + 4
			return put64(b, o, 1<<30)
		})},
		{"alignment not pow2", "power of two", mod(func(b []byte) []byte {
			o := kvOff("general.alignment") + 8 + 17 + 4
			return put32(b, o, 48)
		})},
		{"zero dims", "dimensions", mod(func(b []byte) []byte { return put32(b, tensorInfoOff+8+1, 0) })},
		{"five dims", "dimensions", mod(func(b []byte) []byte { return put32(b, tensorInfoOff+8+1, 5) })},
		{"huge dim", "too many elements", mod(func(b []byte) []byte {
			return put64(b, tensorInfoOff+8+1+4+8, 1<<47)
		})},
		{"unknown tensor type", "unsupported type", mod(func(b []byte) []byte {
			return put32(b, tensorInfoOff+8+1+4+16, 99)
		})},
		{"misaligned offset", "not a multiple of the alignment", mod(func(b []byte) []byte {
			return put64(b, tensorInfoOff+8+1+4+16+4, 8)
		})},
		{"offset past end", "extends past the end", mod(func(b []byte) []byte {
			return put64(b, tensorInfoOff+8+1+4+16+4, 1<<20)
		})},
		{"overlap", "overlaps", mod(func(b []byte) []byte {
			// second tensor ("b") moved onto the first
			o := tensorInfoOff + (8 + 1 + 4 + 16 + 4 + 8) + 8 + 1 + 4 + 8 + 4
			return put64(b, o, 0)
		})},
		{"duplicate tensor", "duplicate tensor name", mod(func(b []byte) []byte {
			b[tensorInfoOff+(8+1+4+16+4+8)+8] = 'a'
			return b
		})},
		{"truncated data", "extends past the end", good[:len(good)-60]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.data)
			if err == nil {
				t.Fatalf("want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
			var fe *FormatError
			if !errors.Is(err, ErrNotGGUF) && !errors.As(err, &fe) {
				t.Errorf("error %T is neither ErrNotGGUF nor *FormatError", err)
			}
		})
	}
}

func TestReferenceFiles(t *testing.T) {
	dir := reftest.Dir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "vocab", "*.gguf"))
	files = append(files, filepath.Join(dir, "models", "stories260K.gguf"))
	for _, p := range files {
		f, err := Open(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if v, ok := f.Get("general.architecture"); !ok || v.Type != TypeString {
			t.Errorf("%s: no general.architecture", p)
		}
		f.Close()
	}
	f, err := Open(filepath.Join(dir, "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || !reflect.DeepEqual(emb.Dims, []uint64{64, 512}) || emb.Type != quant.F32 {
		t.Errorf("token_embd.weight = %+v", emb)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(fixture(f))
	// Seeds from the shared reference files when they are beside the checkout.
	{
		matches, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "reference", "vocab", "*.gguf"))
		for _, m := range matches {
			if b, err := os.ReadFile(m); err == nil && len(b) < 1<<21 {
				f.Add(b[:min(len(b), 1<<16)]) // the header part; the fuzzer mutates it
			}
		}
		if b, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "reference", "models", "stories260K.gguf")); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		for i := range file.Tensors {
			ti := &file.Tensors[i]
			if b := file.TensorData(ti); uint64(len(b)) != ti.Size {
				t.Fatalf("tensor %s: %d bytes, want %d", ti.Name, len(b), ti.Size)
			}
		}
	})
}

// ParseHeader reads from every head at least as long as the tensor infos
// what Parse reads from the whole file, and from every shorter head says
// it needs more (never a format error, never a panic).
func TestParseHeaderFromEveryHead(t *testing.T) {
	data := fixture(t)
	whole, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	infosEnd := int(whole.DataOffset) // the tensor infos end in the padding before it
	for n := 0; n <= len(data); n++ {
		f, err := ParseHeader(data[:n], int64(len(data)))
		if err != nil {
			if !errors.Is(err, ErrShortHeader) || n >= infosEnd {
				t.Fatalf("head of %d bytes (infos end by %d): %v", n, infosEnd, err)
			}
			continue
		}
		if !reflect.DeepEqual(f.KV, whole.KV) || !reflect.DeepEqual(f.Tensors, whole.Tensors) || f.DataOffset != whole.DataOffset {
			t.Fatalf("head of %d bytes: a header unlike Parse's", n)
		}
		if f.TensorData(&f.Tensors[0]) != nil {
			t.Fatalf("head of %d bytes: tensor data from a header", n)
		}
	}
}

// The tensor layout is checked against the file's size, not the head's:
// a file declared shorter than its tensors is refused at once.
func TestParseHeaderChecksLayoutAgainstSize(t *testing.T) {
	data := fixture(t)
	whole, _ := Parse(data)
	_, err := ParseHeader(data[:whole.DataOffset], whole.DataOffset+4)
	var fe *FormatError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "extends past the end of the file") {
		t.Errorf("tensors past the declared size: %v", err)
	}
	if _, err := ParseHeader(data, int64(len(data)-1)); err == nil {
		t.Errorf("a head longer than the file's size was accepted")
	}
}

// A hostile header declaring the most tensors, keys and array elements a
// huge file could hold costs no more memory than the head's bytes.
func TestParseHeaderAllocatesByHead(t *testing.T) {
	for _, tc := range []struct {
		name string
		head []byte
	}{
		{"counts", binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64([]byte("GGUF\x03\x00\x00\x00"), 1<<24), 1<<24)},
		{"array", func() []byte {
			b := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64([]byte("GGUF\x03\x00\x00\x00"), 0), 1)
			b = binary.LittleEndian.AppendUint64(b, 1)
			b = append(b, 'k')
			b = binary.LittleEndian.AppendUint32(b, uint32(TypeArray))
			b = binary.LittleEndian.AppendUint32(b, uint32(TypeString))
			return binary.LittleEndian.AppendUint64(b, 1<<24)
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ParseHeader(tc.head, 1<<40)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrShortHeader) {
				t.Errorf("err = %v, want ErrShortHeader", err)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
				t.Errorf("parsing a %d-byte head allocated %d bytes", len(tc.head), grew)
			}
		})
	}
}

// FuzzParseHeader: any head of any file parses or fails without a panic,
// and a header that parses is the whole file's: Parse, which checks
// nothing more of the data section than its size, accepts it alike.
func FuzzParseHeader(f *testing.F) {
	f.Add(fixture(f), uint16(300))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		head := data[:min(int(cut), len(data))]
		h, err := ParseHeader(head, int64(len(data)))
		if err != nil {
			return
		}
		whole, err := Parse(data)
		if err != nil {
			t.Fatalf("the header parses but the whole file does not: %v", err)
		}
		if !reflect.DeepEqual(h.Tensors, whole.Tensors) || h.DataOffset != whole.DataOffset {
			t.Fatalf("header and whole file disagree on the tensors")
		}
	})
}

package model

import (
	"fmt"
	"strings"

	"stepthrough/engine/gguf"
)

// Summary is what a model picker shows of a file, read from its header
// alone (no weights bound).
type Summary struct {
	Arch, Name string
	Params     uint64
	Type       string // the type holding most of the weights' bytes
	Context    int
	// Layers, KVHeads and HeadDim size the KV cache (0 when the header
	// lacks them).
	Layers, KVHeads, HeadDim int
}

// Summarize reads a file's summary.
func Summarize(f *gguf.File) Summary {
	s := Summary{}
	if v, ok := f.Get("general.architecture"); ok {
		s.Arch, _ = v.V.(string)
	}
	if v, ok := f.Get("general.name"); ok {
		s.Name, _ = v.V.(string)
	}
	if v, ok := f.Get(s.Arch + ".context_length"); ok {
		n, _ := v.Uint()
		s.Context = int(min(n, maxContext))
	}
	s.Layers, s.KVHeads, s.HeadDim = headerInt(f, s.Arch+".block_count"), headerInt(f, s.Arch+".attention.head_count_kv"), headerInt(f, s.Arch+".attention.key_length")
	if s.KVHeads == 0 {
		s.KVHeads = headerInt(f, s.Arch+".attention.head_count")
	}
	if h := headerInt(f, s.Arch+".attention.head_count"); s.HeadDim == 0 && h > 0 {
		s.HeadDim = headerInt(f, s.Arch+".embedding_length") / h
	}
	for i := range f.Tensors {
		s.Params += f.Tensors[i].Elements()
	}
	bytes := typeBytes(f)
	var most uint64
	for t, b := range bytes {
		if b > most || b == most && t.String() < s.Type {
			most, s.Type = b, t.String()
		}
	}
	return s
}

// String is the summary in one line: "qwen3 · 596.05 M parameters · Q4_K ·
// context 40960".
func (s Summary) String() string {
	parts := []string{s.Arch}
	if s.Params > 0 {
		parts = append(parts, HumanCount(s.Params)+" parameters", s.Type)
	}
	if s.Context > 0 {
		parts = append(parts, fmt.Sprintf("context %d", s.Context))
	}
	return strings.Join(parts, " · ")
}

// HumanCount writes a count with K, M or B.
func HumanCount(n uint64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f B", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f M", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f K", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// headerInt is a small count from the header (0 when missing, not a
// number or implausible: an array's per-layer value is left out).
func headerInt(f *gguf.File, key string) int {
	v, ok := f.Get(key)
	if !ok {
		return 0
	}
	n, isInt := v.Uint()
	if !isInt || n > 1<<20 {
		return 0
	}
	return int(n)
}

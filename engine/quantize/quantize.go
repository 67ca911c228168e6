// Package quantize rewrites a GGUF model with its weights in fewer bits:
// every type the engine loads (F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
// Q4_K, Q5_K, Q6_K) and the mixed presets llama.cpp names (Q4_K_M,
// Q5_K_M), choosing each tensor's type by llama.cpp's rules: norms and
// biases stay F32, the output matrix (or a tied embedding) gets Q6_K, the
// _M presets give Q6_K to attn_v (a fused attn_qkv counts as one) and
// ffn_down in the layers that matter most, a 70B model's other attn_v
// get Q5_K, and a row that is not a whole number of blocks falls back to
// a type whose blocks fit. The metadata is kept, with general.file_type and
// general.quantization_version set as llama.cpp writes them.
package quantize

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"stepthrough/engine/gguf"
	"stepthrough/engine/quant"
)

// Targets are the types and presets a model can be quantized to.
var Targets = []string{"F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K", "Q4_K_M", "Q5_K_M"}

// fileTypes are llama.cpp's general.file_type values (enum llama_ftype).
var fileTypes = map[string]uint32{"F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q4_K": 14, "Q4_K_M": 15, "Q5_K": 16,
	"Q5_K_M": 17, "Q6_K": 18, "BF16": 32}

// Options are a conversion's settings.
type Options struct {
	Target string // one of Targets
	// AllowRequantize converts weights that are already quantized (their
	// errors add up) instead of refusing.
	AllowRequantize bool
	// Progress, when set, is called after each tensor with the bytes of
	// source tensors done and in all.
	Progress func(done, total int64)
}

// Tensor is what the conversion did to one tensor.
type Tensor struct {
	Name     string
	From, To quant.Type
	Elements int64
	// RMSE is the root-mean-square error of the converted values against
	// the source's (0 for a tensor copied as it was).
	RMSE float64
}

// Report is a whole conversion.
type Report struct {
	Target            string
	Tensors           []Tensor
	BytesIn, BytesOut int64
}

// Types counts the tensors of each type written.
func (r *Report) Types() map[quant.Type]int {
	m := map[quant.Type]int{}
	for _, t := range r.Tensors {
		m[t.To]++
	}
	return m
}

// ParseTarget normalises a target name ("q4_k_m" → "Q4_K_M").
func ParseTarget(s string) (string, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if !slices.Contains(Targets, u) {
		return "", fmt.Errorf("type %q: choose one of %s", s, strings.Join(Targets, ", "))
	}
	return u, nil
}

// File converts the model at in and writes out.
func File(in, out string, opt Options) (*Report, error) {
	target, err := ParseTarget(opt.Target)
	if err != nil {
		return nil, err
	}
	if same, err := samePath(in, out); err != nil {
		return nil, err
	} else if same {
		return nil, fmt.Errorf("the output %s is the input: write to another file", out)
	}
	f, err := gguf.Open(in)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w, rep, err := Convert(f, target, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in, err)
	}
	if err := w.WriteFile(out); err != nil {
		return nil, err
	}
	st, err := os.Stat(out)
	if err == nil {
		rep.BytesOut = st.Size()
	}
	return rep, nil
}

// samePath reports whether two paths name one file.
func samePath(a, b string) (bool, error) {
	aa, err := filepath.Abs(a)
	if err != nil {
		return false, err
	}
	bb, err := filepath.Abs(b)
	if err != nil {
		return false, err
	}
	if aa == bb {
		return true, nil
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb), nil
}

// Convert builds the converted file's writer from a parsed source.
func Convert(f *gguf.File, target string, opt Options) (*gguf.Writer, *Report, error) {
	rep := &Report{Target: target}
	plan, err := choose(f, target, opt.AllowRequantize)
	if err != nil {
		return nil, nil, err
	}
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		w.SetValue(kv.Key, kv.Value)
	}
	w.MustSet("general.file_type", fileTypes[target])
	w.MustSet("general.quantization_version", uint32(2))
	var total, done int64
	for i := range f.Tensors {
		total += int64(f.Tensors[i].Size)
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		to := plan[t.Name]
		data := f.TensorData(t)
		rec := Tensor{Name: t.Name, From: t.Type, To: to, Elements: int64(t.Elements())}
		if to != t.Type {
			src := make([]float32, t.Elements())
			if err := quant.Dequantize(t.Type, data, src); err != nil {
				return nil, nil, fmt.Errorf("tensor %s: %w", t.Name, err)
			}
			if data, err = quant.Quantize(to, src); err != nil {
				return nil, nil, fmt.Errorf("tensor %s: %w", t.Name, err)
			}
			rec.RMSE = rmse(src, to, data)
		}
		if err := w.AddTensor(t.Name, to, t.Dims, data); err != nil {
			return nil, nil, err
		}
		rep.Tensors = append(rep.Tensors, rec)
		rep.BytesIn += int64(t.Size)
		done += int64(t.Size)
		if opt.Progress != nil {
			opt.Progress(done, total)
		}
	}
	return w, rep, nil
}

// rmse is the root-mean-square error of data (type to) against src.
func rmse(src []float32, to quant.Type, data []byte) float64 {
	back := make([]float32, len(src))
	if quant.Dequantize(to, data, back) != nil {
		return math.NaN()
	}
	var s float64
	for i, v := range src {
		d := float64(v) - float64(back[i])
		s += d * d
	}
	return math.Sqrt(s / float64(max(1, len(src))))
}

var errQuantized = errors.New("already quantized")

// choose assigns every tensor its type (Layout.Plan), refusing weights
// already quantized unless requantize.
func choose(f *gguf.File, target string, requantize bool) (map[string]quant.Type, error) {
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if len(t.Dims) < 2 || !strings.HasSuffix(t.Name, ".weight") {
			continue // norms, biases: kept
		}
		if t.Type != quant.F32 && t.Type != quant.F16 && t.Type != quant.BF16 && !requantize {
			return nil, fmt.Errorf("tensor %s is %s: %w (requantizing adds errors; --allow-requantize to do it anyway)", t.Name, t.Type, errQuantized)
		}
	}
	return LayoutOf(f).Plan(target), nil
}

// moreBits is llama.cpp's use_more_bits: the first and last eighth of the
// layers, and every third one between.
func moreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// fallback is a type whose blocks fit a row of cols values, as llama.cpp
// falls back (Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0, then F16).
func fallback(t quant.Type, cols int) quant.Type {
	if cols%t.BlockElems() == 0 {
		return t
	}
	next := map[quant.Type]quant.Type{quant.Q4_K: quant.Q5_0, quant.Q5_K: quant.Q5_1, quant.Q6_K: quant.Q8_0}[t]
	if next != 0 && cols%next.BlockElems() == 0 {
		return next
	}
	return quant.F16
}

// blockOf splits "blk.3.attn_v.weight" into 3 and "attn_v.weight" (-1 for
// tensors outside the blocks).
func blockOf(name string) (int, string) {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return -1, name
	}
	num, tail, ok := strings.Cut(rest, ".")
	n, err := strconv.Atoi(num)
	if !ok || err != nil {
		return -1, name
	}
	return n, tail
}

// archKey is "<arch>.<key>" for the file's architecture.
func archKey(f *gguf.File, key string) string {
	arch := ""
	if v, ok := f.Get("general.architecture"); ok {
		arch, _ = v.V.(string)
	}
	return arch + "." + key
}

package quantize

import (
	"strconv"
	"strings"

	"stepthrough/engine/gguf"
	"stepthrough/engine/quant"
)

// Layout is a model as llama.cpp's per-tensor rule reads it: its
// architecture, its layer and head counts, and its tensors' names and
// dimensions (the row length first, as GGUF stores them). A model file
// gives one (LayoutOf); so does a published shape (LlamaLayout), which is
// how the memory calculator sizes a mixed preset without the file.
type Layout struct {
	Arch           string
	Layers         int
	Heads, KVHeads int
	Tensors        []Dims
}

// Dims is one tensor of a Layout.
type Dims struct {
	Name string
	Dims []uint64
	Type quant.Type // as stored (a published shape's are F32)
}

// Elements is the tensor's value count.
func (d Dims) Elements() uint64 {
	n := uint64(1)
	for _, v := range d.Dims {
		n *= v
	}
	return n
}

// LayoutOf reads a file's layout.
func LayoutOf(f *gguf.File) Layout {
	l := Layout{Arch: archOf(f), Layers: archInt(f, "block_count"), Heads: archInt(f, "attention.head_count"), KVHeads: archInt(f, "attention.head_count_kv")}
	if l.KVHeads == 0 {
		l.KVHeads = l.Heads
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		l.Tensors = append(l.Tensors, Dims{Name: t.Name, Dims: t.Dims, Type: t.Type})
	}
	return l
}

// LlamaLayout is the tensors of a llama-family model of a published
// shape: the embedding, an output matrix unless tied, and per layer the
// norms, Q, K, V, the attention output and the gated MLP.
func LlamaLayout(embd, ffn, layers, heads, kvHeads, headDim, vocab int, tied bool) Layout {
	e, f, kv, q := uint64(embd), uint64(ffn), uint64(kvHeads*headDim), uint64(heads*headDim)
	l := Layout{Arch: "llama", Layers: layers, Heads: heads, KVHeads: kvHeads}
	add := func(name string, dims ...uint64) {
		l.Tensors = append(l.Tensors, Dims{Name: name, Dims: dims, Type: quant.F32})
	}
	add("token_embd.weight", e, uint64(vocab))
	add("output_norm.weight", e)
	if !tied {
		add("output.weight", e, uint64(vocab))
	}
	for i := range layers {
		p := "blk." + strconv.Itoa(i) + "."
		add(p+"attn_norm.weight", e)
		add(p+"attn_q.weight", e, q)
		add(p+"attn_k.weight", e, kv)
		add(p+"attn_v.weight", e, kv)
		add(p+"attn_output.weight", q, e)
		add(p+"ffn_norm.weight", e)
		add(p+"ffn_gate.weight", e, f)
		add(p+"ffn_up.weight", e, f)
		add(p+"ffn_down.weight", f, e)
	}
	return l
}

// is70B is llama.cpp's LLM_TYPE_70B (a llama with 80 layers and grouped
// KV heads, or a qwen2 with 80), whose attn_v gets Q5_K where the rule
// would give Q4_K (or Q3_K, a type this engine lacks): that matrix is 8× smaller than attn_q there.
func (l Layout) is70B() bool {
	return l.Layers == 80 && (l.Arch == "llama" && l.Heads != l.KVHeads || l.Arch == "qwen2")
}

// baseTypes are each target's type before the per-tensor rule.
var baseTypes = map[string]quant.Type{"F16": quant.F16, "BF16": quant.BF16, "Q8_0": quant.Q8_0, "Q4_0": quant.Q4_0, "Q4_1": quant.Q4_1,
	"Q5_0": quant.Q5_0, "Q5_1": quant.Q5_1, "Q4_K": quant.Q4_K, "Q5_K": quant.Q5_K, "Q6_K": quant.Q6_K, "Q4_K_M": quant.Q4_K, "Q5_K_M": quant.Q5_K}

// Plan is the type target gives each tensor of l, by llama.cpp's rules
// (llama_tensor_get_type): norms and biases keep their type; the output
// matrix (or a tied embedding) gets Q6_K at a low-bit target; the _M
// presets give Q6_K to attn_v (and a fused attn_qkv, which llama.cpp
// counts as attn_v) and ffn_down in the layers that matter most; a 70B
// model's other attn_v get Q5_K; a row that is not a whole number of
// blocks falls back to a type whose blocks fit.
func (l Layout) Plan(target string) map[string]quant.Type {
	base := baseTypes[target]
	lowBits := base != quant.F16 && base != quant.BF16 && base != quant.Q8_0
	hasOutput := false
	for _, t := range l.Tensors {
		hasOutput = hasOutput || t.Name == "output.weight"
	}
	plan := make(map[string]quant.Type, len(l.Tensors))
	for _, t := range l.Tensors {
		plan[t.Name] = t.Type
		if len(t.Dims) < 2 || !strings.HasSuffix(t.Name, ".weight") {
			continue // norms, biases: kept
		}
		to := base
		layer, name := blockOf(t.Name)
		attnV := name == "attn_v.weight" || name == "attn_qkv.weight"
		mixed := target == "Q4_K_M" || target == "Q5_K_M"
		switch {
		case lowBits && (t.Name == "output.weight" || !hasOutput && t.Name == "token_embd.weight"):
			to = quant.Q6_K // the output matrix is the most sensitive
		case mixed && (attnV || name == "ffn_down.weight") && layer >= 0 && moreBits(layer, l.Layers):
			to = quant.Q6_K
		}
		if attnV && l.is70B() && to == quant.Q4_K {
			to = quant.Q5_K
		}
		plan[t.Name] = fallback(to, int(t.Dims[0]))
	}
	return plan
}

// Mix is how a plan spends its bytes: the values and bytes of each type.
type Mix struct {
	Values, Bytes map[quant.Type]float64
}

// MixOf sums the plan of target over l's tensors.
func (l Layout) MixOf(target string) Mix {
	plan := l.Plan(target)
	m := Mix{Values: map[quant.Type]float64{}, Bytes: map[quant.Type]float64{}}
	for _, t := range l.Tensors {
		ty := plan[t.Name]
		n := float64(t.Elements())
		m.Values[ty] += n
		m.Bytes[ty] += n * float64(ty.BlockBytes()) / float64(ty.BlockElems())
	}
	return m
}

// Total is the plan's values and bytes.
func (m Mix) Total() (values, bytes float64) {
	for t, v := range m.Values {
		values += v
		bytes += m.Bytes[t]
	}
	return values, bytes
}

func archOf(f *gguf.File) string {
	if v, ok := f.Get("general.architecture"); ok {
		s, _ := v.V.(string)
		return s
	}
	return ""
}

func archInt(f *gguf.File, key string) int {
	if v, ok := f.Get(archKey(f, key)); ok {
		if n, ok := v.Uint(); ok && n < 1<<20 {
			return int(n)
		}
	}
	return 0
}

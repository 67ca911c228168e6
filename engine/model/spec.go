package model

import (
	"slices"
	"sort"
)

// NormKind is the normalisation a block uses.
type NormKind int

const (
	RMSNorm   NormKind = iota // x / rms(x) * w
	LayerNorm                 // (x - mean) / std * w + b
)

// RopeKind is how rotary position embeddings pair up a head's values.
type RopeKind int

const (
	RopeNone RopeKind = iota // learned or no position embeddings
	RopeNorm                 // pairs of adjacent values (llama.cpp NORM; GGUF llama)
	RopeNeoX                 // value i pairs with i + dims/2 (NEOX; qwen2, HF layout)
)

// FFNKind is the feed-forward block.
type FFNKind int

const (
	SwiGLU      FFNKind = iota // down(silu(gate(x)) * up(x))
	GELU                       // down(gelu(up(x)))
	GeGLU                      // down(gelu(gate(x)) * up(x)), GELU's tanh form (gemma)
	SwiGLUFused                // down(silu(a) * b) where [a|b] = up(x), one matrix of 2×FFN rows (phi3)
)

// QKVLayout is how the attention projections are stored.
type QKVLayout int

const (
	QKVSeparate QKVLayout = iota // attn_q, attn_k, attn_v
	QKVFused                     // one attn_qkv matrix
	QKVEither                    // either form (phi3 files have both)
)

// Spec declares an architecture: what its blocks compute and which tensors
// it must have. Tensor names are the GGUF base names bound by Weights'
// tags. Every family is one Spec below, so the differences between them
// read in one place; the backends compute from these fields and the
// Config, never from the family's name.
type Spec struct {
	Name    string
	Norm    NormKind
	Rope    RopeKind
	FFN     FFNKind
	QKV     QKVLayout
	PosEmbd bool // learned position embeddings (position_embd)
	// QKNorm: each head's query and key are RMS-normed (attn_q_norm,
	// attn_k_norm, one weight per head dimension) before RoPE.
	QKNorm bool
	// PostNorms: the attention and MLP outputs are RMS-normed
	// (attn_post_norm, ffn_post_norm) before they join the residual.
	PostNorms bool
	// EmbedScale: the token embedding is multiplied by √width.
	EmbedScale bool
	// Sliding-window attention: local layers see only the last Window
	// positions. SWADefaultWindow applies when the file names no window
	// (0: no sliding window unless the file sets one); SWAPeriod is the
	// default layer pattern (every Period-th layer global, the rest local).
	SWADefaultWindow int
	SWAPeriod        int
	// LocalRopeBase is the local layers' RoPE base when the file does not
	// set rope.freq_base_swa; they then rotate unscaled. 0: the global
	// layers' base and scaling.
	LocalRopeBase float32
	// LongRoPE: the file may carry long and short frequency factors.
	LongRoPE bool
	// Soft caps (cap·tanh(x/cap)) on the attention scores and the final
	// logits when the file does not set them (0: none unless it does).
	AttnSoftcap, FinalSoftcap float32
	// FinalSoftcapKey: the family reads final_logit_softcapping even with
	// no default cap (gemma3: optional).
	FinalSoftcapKey bool
	// WidthScaleLayers: block counts at which the attention scale is
	// 1/√(width/heads) instead of 1/√(head size), as llama.cpp decides for
	// gemma's 27B shapes from the layer count.
	WidthScaleLayers []int
	// QKVBiases: the family's files carry biases on Q, K and V (qwen2's
	// do; the loader reads them when present in any family but gpt2's,
	// whose fused Q·K·V bias is required).
	QKVBiases bool
	// OutputBias: the file may carry a bias added to the logits
	// (output.bias; qwen2's loader in llama.cpp reads it when present).
	OutputBias bool
	// Required lists the tensors that must exist; others in Weights are
	// optional (biases, a separate output matrix).
	Required []string
}

var registry = map[string]*Spec{}

// Register adds an architecture, keyed by general.architecture.
func Register(s *Spec) { registry[s.Name] = s }

// Lookup returns the architecture registered under name.
func Lookup(name string) (*Spec, bool) { s, ok := registry[name]; return s, ok }

// Architectures lists the registered architecture names.
func Architectures() []string {
	var n []string
	for k := range registry {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// the tensors of a pre-norm block with a gated MLP (Q, K and V fused or
// not: the layer check requires one or the other)
var llamaTensors = []string{"token_embd.weight", "output_norm.weight",
	"attn_norm.weight", "attn_output.weight",
	"ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"}

func with(base []string, more ...string) []string {
	return append(append([]string(nil), base...), more...)
}

func init() {
	// Q, K and V: llama.cpp's loaders for these families (its
	// create_tensor_qkv) take one attn_qkv matrix (with an optional bias)
	// or the three, each with an optional bias; so does the engine.
	Register(&Spec{Name: "llama", Norm: RMSNorm, Rope: RopeNorm, FFN: SwiGLU, QKV: QKVEither, Required: llamaTensors})
	Register(&Spec{
		Name: "gpt2", Norm: LayerNorm, Rope: RopeNone, FFN: GELU, QKV: QKVFused, PosEmbd: true,
		Required: []string{"token_embd.weight", "position_embd.weight", "output_norm.weight", "output_norm.bias",
			"attn_norm.weight", "attn_norm.bias", "attn_qkv.weight", "attn_qkv.bias", "attn_output.weight", "attn_output.bias",
			"ffn_norm.weight", "ffn_norm.bias", "ffn_up.weight", "ffn_up.bias", "ffn_down.weight", "ffn_down.bias"},
	})
	// qwen2: llama with biases on Q, K and V (which its files carry, though
	// llama.cpp's loader does not require them), NEOX RoPE and an optional
	// bias on the logits.
	Register(&Spec{Name: "qwen2", Norm: RMSNorm, Rope: RopeNeoX, FFN: SwiGLU, QKV: QKVEither, QKVBiases: true, OutputBias: true, Required: llamaTensors})
	// qwen3: no biases; each head's Q and K RMS-normed before RoPE; the
	// head size from attention.key_length.
	Register(&Spec{Name: "qwen3", Norm: RMSNorm, Rope: RopeNeoX, FFN: SwiGLU, QKV: QKVEither, QKNorm: true,
		Required: with(llamaTensors, "attn_q_norm.weight", "attn_k_norm.weight")})
	// gemma2: embedding ×√d, norms after each sub-layer too, a GELU-gated
	// MLP, alternating local (4096) and global layers, soft caps on the
	// attention scores (50) and the logits (30).
	Register(&Spec{Name: "gemma2", Norm: RMSNorm, Rope: RopeNeoX, FFN: GeGLU, QKV: QKVEither, PostNorms: true, EmbedScale: true,
		SWADefaultWindow: 4096, SWAPeriod: 2, AttnSoftcap: 50, FinalSoftcap: 30, WidthScaleLayers: []int{46},
		Required: with(llamaTensors, "post_attention_norm.weight", "post_ffw_norm.weight")})
	// gemma3: gemma2's block with Q/K norms instead of the score soft cap;
	// five local layers to each global one, with their own RoPE base.
	Register(&Spec{Name: "gemma3", Norm: RMSNorm, Rope: RopeNeoX, FFN: GeGLU, QKV: QKVEither, QKNorm: true, PostNorms: true, EmbedScale: true,
		SWAPeriod: 6, LocalRopeBase: 10000, WidthScaleLayers: []int{62}, FinalSoftcapKey: true,
		Required: with(llamaTensors, "post_attention_norm.weight", "post_ffw_norm.weight", "attn_q_norm.weight", "attn_k_norm.weight")})
	// phi3: fused QKV and gate-up matrices; LongRoPE frequency factors.
	Register(&Spec{Name: "phi3", Norm: RMSNorm, Rope: RopeNeoX, FFN: SwiGLUFused, QKV: QKVEither, LongRoPE: true,
		Required: []string{"token_embd.weight", "output_norm.weight", "attn_norm.weight", "attn_output.weight",
			"ffn_norm.weight", "ffn_up.weight", "ffn_down.weight"}})
}

// allows reports whether a tensor (its base name) belongs to the family:
// the required ones and the optional ones its features read.
func (s *Spec) allows(tag string) bool {
	if slices.Contains(s.Required, tag) {
		return true
	}
	switch tag {
	case "output.weight":
		return true
	case "output.bias":
		return s.OutputBias
	case "position_embd.weight":
		return s.PosEmbd
	case "output_norm.bias", "attn_norm.bias", "ffn_norm.bias":
		return s.Norm == LayerNorm
	case "attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_q.bias", "attn_k.bias", "attn_v.bias":
		return s.QKV != QKVFused
	case "attn_qkv.weight", "attn_qkv.bias":
		return s.QKV != QKVSeparate
	case "attn_output.bias":
		return true
	case "ffn_gate.weight", "ffn_gate.bias":
		return s.FFN == SwiGLU || s.FFN == GeGLU
	case "ffn_up.bias", "ffn_down.bias":
		return true
	case "attn_q_norm.weight", "attn_k_norm.weight":
		return s.QKNorm
	case "post_attention_norm.weight", "post_ffw_norm.weight":
		return s.PostNorms
	case "rope_freqs.weight":
		return s.Rope != RopeNone
	case "rope_factors_long.weight", "rope_factors_short.weight":
		return s.LongRoPE
	}
	return false
}

package model

import "sort"

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
	SwiGLU FFNKind = iota // down(silu(gate(x)) * up(x))
	GELU                  // down(gelu(up(x)))
)

// Spec declares an architecture: what its blocks compute and which tensors
// it must have. Tensor names are the GGUF base names bound by Weights' tags.
type Spec struct {
	Name     string
	Norm     NormKind
	Rope     RopeKind
	FFN      FFNKind
	FusedQKV bool // one attn_qkv matrix instead of attn_q/k/v
	PosEmbd  bool // learned position embeddings (position_embd)
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

func init() {
	Register(&Spec{
		Name: "llama", Norm: RMSNorm, Rope: RopeNorm, FFN: SwiGLU,
		Required: []string{"token_embd.weight", "output_norm.weight",
			"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight",
			"ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"},
	})
	Register(&Spec{
		Name: "gpt2", Norm: LayerNorm, Rope: RopeNone, FFN: GELU, FusedQKV: true, PosEmbd: true,
		Required: []string{"token_embd.weight", "position_embd.weight", "output_norm.weight", "output_norm.bias",
			"attn_norm.weight", "attn_norm.bias", "attn_qkv.weight", "attn_qkv.bias", "attn_output.weight", "attn_output.bias",
			"ffn_norm.weight", "ffn_norm.bias", "ffn_up.weight", "ffn_up.bias", "ffn_down.weight", "ffn_down.bias"},
	})
}

// Package model declares the transformer architectures the engine runs and
// loads a GGUF file into a Model: hyperparameters (Config), the bound
// weight tensors (Weights) and the tokenizer.
//
// An architecture is declared, not hand-loaded: a Spec names the
// normalisation, position encoding, attention layout and feed-forward kind,
// and which tensors must exist; the Weights struct's field tags name the
// GGUF tensors, and one binder checks every tensor's presence, type and
// shape against the Config. Adding an architecture such as qwen2 (RMSNorm,
// NEOX RoPE, QKV biases, SwiGLU) is one more Spec in the registry.
//
// # Security
//
// Model files are untrusted. Hyperparameters are range-checked before any
// buffer is sized from them, and every tensor's shape is checked against
// them before the backends index into its data.
package model

import (
	"fmt"

	"stepthrough/engine/gguf"
)

// Config holds the hyperparameters of a model.
type Config struct {
	Arch       string
	Name       string
	ContextLen int
	Embd       int // model width
	Layers     int
	FFN        int // feed-forward hidden width
	Heads      int
	KVHeads    int
	HeadDim    int
	Vocab      int
	NormEps    float32
	RopeDims   int     // dimensions rotated per head (0 for no RoPE)
	RopeBase   float32 // theta base
}

// QDim is the width of all query heads; KVDim of all key (or value) heads.
func (c *Config) QDim() int  { return c.Heads * c.HeadDim }
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// Limits on hyperparameters read from files: far above any model this
// engine is meant for, low enough that buffers sized from them are sane.
const (
	maxEmbd    = 1 << 16
	maxLayers  = 1024
	maxHeads   = 1024
	maxFFN     = 1 << 18
	maxContext = 1 << 20
	maxVocab   = 1 << 22
)

func readConfig(f *gguf.File, spec *Spec) (*Config, error) {
	a := spec.Name
	c := &Config{Arch: a, RopeBase: 10000}
	if v, ok := f.Get("general.name"); ok {
		c.Name, _ = v.V.(string)
	}
	type intKey struct {
		key      string
		dst      *int
		required bool
		max      int
	}
	for _, k := range []intKey{
		{a + ".context_length", &c.ContextLen, true, maxContext},
		{a + ".embedding_length", &c.Embd, true, maxEmbd},
		{a + ".block_count", &c.Layers, true, maxLayers},
		{a + ".feed_forward_length", &c.FFN, spec.FFN == SwiGLU, maxFFN},
		{a + ".attention.head_count", &c.Heads, true, maxHeads},
		{a + ".attention.head_count_kv", &c.KVHeads, false, maxHeads},
		{a + ".attention.key_length", &c.HeadDim, false, maxEmbd},
		{a + ".rope.dimension_count", &c.RopeDims, false, maxEmbd},
		{a + ".vocab_size", &c.Vocab, false, maxVocab},
	} {
		v, ok := f.Get(k.key)
		if !ok {
			if k.required {
				return nil, fmt.Errorf("metadata %s: missing", k.key)
			}
			continue
		}
		n, ok := v.Uint()
		if !ok {
			return nil, fmt.Errorf("metadata %s: want an integer, got %s %v", k.key, v.Type, v)
		}
		if n < 1 || n > uint64(k.max) {
			return nil, fmt.Errorf("metadata %s = %d is outside 1..%d", k.key, n, k.max)
		}
		*k.dst = int(n)
	}
	epsKey := a + ".attention.layer_norm_rms_epsilon"
	if spec.Norm == LayerNorm {
		epsKey = a + ".attention.layer_norm_epsilon"
	}
	eps, ok := f.Get(epsKey)
	if !ok {
		return nil, fmt.Errorf("metadata %s: missing", epsKey)
	}
	e, ok := eps.Float()
	if !ok || !(e > 0 && e < 1) {
		return nil, fmt.Errorf("metadata %s = %v: want a float in (0, 1)", epsKey, eps)
	}
	c.NormEps = float32(e)
	if v, ok := f.Get(a + ".rope.freq_base"); ok {
		b, ok := v.Float()
		if !ok || !(b > 1 && b < 1e12) {
			return nil, fmt.Errorf("metadata %s.rope.freq_base = %v: want a float above 1", a, v)
		}
		c.RopeBase = float32(b)
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.Heads%c.KVHeads != 0 {
		return nil, fmt.Errorf("metadata: %d attention heads is not a multiple of %d KV heads", c.Heads, c.KVHeads)
	}
	if c.HeadDim == 0 {
		if c.Embd%c.Heads != 0 {
			return nil, fmt.Errorf("metadata: embedding length %d is not a multiple of %d heads", c.Embd, c.Heads)
		}
		c.HeadDim = c.Embd / c.Heads
	}
	if spec.Rope == RopeNone {
		c.RopeDims = 0
	} else {
		if c.RopeDims == 0 {
			c.RopeDims = c.HeadDim
		}
		if c.RopeDims > c.HeadDim || c.RopeDims%2 != 0 {
			return nil, fmt.Errorf("metadata %s.rope.dimension_count = %d: must be even and at most the head size %d", a, c.RopeDims, c.HeadDim)
		}
	}
	if c.FFN == 0 {
		c.FFN = 4 * c.Embd
	}
	return c, nil
}

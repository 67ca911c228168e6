// Package model declares the transformer architectures the engine runs and
// loads a GGUF file into a Model: hyperparameters (Config), the bound
// weight tensors (Weights) and the tokenizer.
//
// An architecture is declared, not hand-loaded: a Spec names the
// normalisation, position encoding, attention layout and feed-forward kind,
// the extra norms, soft caps and sliding windows, and which tensors must
// exist; the Weights struct's field tags name the GGUF tensors, and one
// binder checks every tensor's presence, type and shape against the
// Config. The families (llama, gpt2, qwen2, qwen3, gemma2, gemma3, phi3)
// are Specs in one registry (spec.go).
//
// # Security
//
// Model files are untrusted. Hyperparameters are range-checked before any
// buffer is sized from them, and every tensor's shape is checked against
// them before the backends index into its data. A key under the
// architecture's prefix or a tensor the engine does not know is refused,
// naming it, rather than ignored into a silently wrong answer.
package model

import (
	"fmt"
	"math"

	"stepthrough/engine/gguf"

	"stepthrough/engine/intervene"
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
	HeadDim    int // one head's query, key and value size (attention.key_length, or width ÷ heads)
	Vocab      int
	NormEps    float32
	RopeDims   int     // dimensions rotated per head (0 for no RoPE)
	RopeBase   float32 // theta base (of the global layers)

	// AttnScale multiplies q·k before the softmax: 1/√HeadDim unless the
	// family says otherwise.
	AttnScale float32
	// AttnSoftcap and FinalSoftcap cap the attention scores and the
	// logits as cap·tanh(x/cap); 0 means no cap.
	AttnSoftcap, FinalSoftcap float32
	// Window is the sliding window of the local layers in positions (a
	// query at p sees keys p−Window+1 … p); Local marks those layers. Both
	// are empty when the model has no sliding window.
	Window int
	Local  []bool
	// Rope and RopeLocal are the rotary encodings of global and local
	// layers (base, scaling).
	Rope, RopeLocal RopeParams
	// RopeOrigCtx is the context the model was trained at
	// (rope.scaling.original_context_length): LongRoPE's long factors
	// apply beyond it.
	RopeOrigCtx int
}

// QDim is the width of all query heads; KVDim of all key (or value) heads.
func (c *Config) QDim() int  { return c.Heads * c.HeadDim }
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// EditShape is what an intervention is checked against: the sizes of the
// sites it may edit.
func (c *Config) EditShape() intervene.Shape {
	return intervene.Shape{Layers: c.Layers, Heads: c.Heads, HeadDim: c.HeadDim, FFN: c.FFN, Embd: c.Embd}
}

// IsLocal reports whether layer l attends through the sliding window.
func (c *Config) IsLocal(l int) bool { return l < len(c.Local) && c.Local[l] }

// RopeFor is the rotary encoding of layer l.
func (c *Config) RopeFor(l int) *RopeParams {
	if c.IsLocal(l) {
		return &c.RopeLocal
	}
	return &c.Rope
}

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

// metadata reads a model's keys, remembering which it read so that
// unknown ones can be refused.
type metadata struct {
	f    *gguf.File
	arch string
	read map[string]bool
}

func readConfig(m *metadata, spec *Spec) (*Config, error) {
	a := spec.Name
	c := &Config{Arch: a}
	if v, ok := m.f.Get("general.name"); ok {
		c.Name, _ = v.V.(string)
	}
	valueLen := 0
	type intKey struct {
		key      string
		dst      *int
		required bool
		max      int
	}
	for _, k := range []intKey{
		{"context_length", &c.ContextLen, true, maxContext},
		{"embedding_length", &c.Embd, true, maxEmbd},
		{"block_count", &c.Layers, true, maxLayers},
		{"feed_forward_length", &c.FFN, spec.FFN != GELU, maxFFN},
		{"attention.head_count", &c.Heads, true, maxHeads},
		{"attention.head_count_kv", &c.KVHeads, false, maxHeads},
		{"attention.key_length", &c.HeadDim, false, maxEmbd},
		{"attention.value_length", &valueLen, false, maxEmbd},
		{"rope.dimension_count", &c.RopeDims, false, maxEmbd},
		{"vocab_size", &c.Vocab, false, maxVocab},
	} {
		if err := m.intKey(k.key, k.dst, k.required, 1, k.max); err != nil {
			return nil, err
		}
	}
	epsKey := "attention.layer_norm_rms_epsilon"
	if spec.Norm == LayerNorm {
		epsKey = "attention.layer_norm_epsilon"
	}
	eps, err := m.floatKey(epsKey, true, 0, 0, 1)
	if err != nil {
		return nil, err
	}
	c.NormEps = float32(eps)
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
	if valueLen != 0 && valueLen != c.HeadDim {
		return nil, fmt.Errorf("metadata %s.attention.value_length = %d: a value head size other than the key head size %d is not supported", a, valueLen, c.HeadDim)
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
	c.AttnScale = float32(1 / math.Sqrt(float64(c.HeadDim)))
	for _, n := range spec.WidthScaleLayers {
		if c.Layers == n {
			c.AttnScale = float32(1 / math.Sqrt(float64(c.Embd/c.Heads)))
		}
	}
	if err := readSoftcaps(m, spec, c); err != nil {
		return nil, err
	}
	if err := readWindow(m, spec, c); err != nil {
		return nil, err
	}
	if err := readRope(m, spec, c); err != nil {
		return nil, err
	}
	return c, m.refuseUnread(spec)
}

// readSoftcaps reads the soft caps a family has (gemma2: both, with
// defaults; gemma3: the final one when the file sets it).
func readSoftcaps(m *metadata, spec *Spec, c *Config) error {
	if spec.AttnSoftcap > 0 {
		v, err := m.floatKey("attn_logit_softcapping", false, float64(spec.AttnSoftcap), 0, 1e6)
		if err != nil {
			return err
		}
		c.AttnSoftcap = float32(v)
	}
	if spec.FinalSoftcap > 0 || spec.FinalSoftcapKey {
		v, err := m.floatKey("final_logit_softcapping", false, float64(spec.FinalSoftcap), 0, 1e6)
		if err != nil {
			return err
		}
		c.FinalSoftcap = float32(v)
	}
	return nil
}

// readWindow reads the sliding window and which layers use it: every
// layer but each Period-th, as llama.cpp's set_swa_pattern.
func readWindow(m *metadata, spec *Spec, c *Config) error {
	if spec.SWAPeriod == 0 {
		m.ignore("attention.sliding_window") // phi3's: llama.cpp disables it too
		return nil
	}
	window := spec.SWADefaultWindow
	if err := m.intKey("attention.sliding_window", &window, false, 0, maxContext); err != nil {
		return err
	}
	period := spec.SWAPeriod
	if err := m.intKey("attention.sliding_window_pattern", &period, false, 0, maxLayers); err != nil {
		return err
	}
	if window == 0 {
		return nil
	}
	c.Window = window
	c.Local = make([]bool, c.Layers)
	for l := range c.Local {
		c.Local[l] = period == 0 || l%period < period-1
	}
	return nil
}

// intKey reads ARCH.key into dst (left as is when absent and optional),
// requiring lo ≤ value ≤ hi.
func (m *metadata) intKey(key string, dst *int, required bool, lo, hi int) error {
	full := m.arch + "." + key
	m.read[full] = true
	v, ok := m.f.Get(full)
	if !ok {
		if required {
			return fmt.Errorf("metadata %s: missing", full)
		}
		return nil
	}
	n, ok := v.Uint()
	if !ok {
		return fmt.Errorf("metadata %s: want an integer, got %s %v", full, v.Type, v)
	}
	if n < uint64(lo) || n > uint64(hi) {
		return fmt.Errorf("metadata %s = %d is outside %d..%d", full, n, lo, hi)
	}
	*dst = int(n)
	return nil
}

// floatKey reads ARCH.key (def when absent and optional), requiring
// lo < value < hi (or 0 ≤ value when lo is 0 and the key is optional).
func (m *metadata) floatKey(key string, required bool, def, lo, hi float64) (float64, error) {
	full := m.arch + "." + key
	m.read[full] = true
	v, ok := m.f.Get(full)
	if !ok {
		if required {
			return 0, fmt.Errorf("metadata %s: missing", full)
		}
		return def, nil
	}
	x, ok := v.Float()
	if !ok {
		return 0, fmt.Errorf("metadata %s = %v: want a float", full, v)
	}
	if !(x > lo && x < hi) && !(x == 0 && lo == 0 && !required) {
		return 0, fmt.Errorf("metadata %s = %v: want a float in (%g, %g)", full, v, lo, hi)
	}
	return x, nil
}

// ignore marks ARCH.key as read without using it (a key llama.cpp also
// ignores for this family).
func (m *metadata) ignore(keys ...string) {
	for _, k := range keys {
		m.read[m.arch+"."+k] = true
	}
}

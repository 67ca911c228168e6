package model

import (
	"fmt"
	"reflect"
	"slices"

	"stepthrough/engine/gguf"
	"stepthrough/engine/quant"
)

// Tensor is a weight tensor: a view of the model file's bytes.
type Tensor struct {
	Name string
	Type quant.Type
	Dims []int // ggml order: Dims[0] is the row length
	Data []byte
}

// Cols is the row length (the input width of a matrix); Rows the number of rows.
func (t *Tensor) Cols() int { return t.Dims[0] }
func (t *Tensor) Rows() int {
	n := 1
	for _, d := range t.Dims[1:] {
		n *= d
	}
	return n
}

// RowBytes is the byte size of one row.
func (t *Tensor) RowBytes() int { n, _ := t.Type.RowBytes(t.Dims[0]); return n }

// Row returns the bytes of row r.
func (t *Tensor) Row(r int) []byte { n := t.RowBytes(); return t.Data[r*n : (r+1)*n] }

// Weights are a model's tensors. Each tag names the GGUF tensor; Layers
// fields are prefixed "blk.N.". Which are required is the Spec's choice.
type Weights struct {
	TokEmbd  *Tensor `gguf:"token_embd.weight"`
	PosEmbd  *Tensor `gguf:"position_embd.weight"`
	OutNorm  *Tensor `gguf:"output_norm.weight"`
	OutNormB *Tensor `gguf:"output_norm.bias"`
	Output   *Tensor `gguf:"output.weight"` // nil: tied to TokEmbd
	OutputB  *Tensor `gguf:"output.bias"`   // qwen2's optional logit bias
	// RoPE frequency factors (θ_i is divided by factor i): llama 3's
	// rope_freqs, or phi3's LongRoPE pair, long for contexts beyond the
	// trained one and short otherwise.
	RopeFreqs *Tensor `gguf:"rope_freqs.weight"`
	RopeLong  *Tensor `gguf:"rope_factors_long.weight"`
	RopeShort *Tensor `gguf:"rope_factors_short.weight"`
	Layers    []Layer `gguf:"blk"`
}

// Layer holds one transformer block's tensors.
type Layer struct {
	AttnNorm  *Tensor `gguf:"attn_norm.weight"`
	AttnNormB *Tensor `gguf:"attn_norm.bias"`
	Q         *Tensor `gguf:"attn_q.weight"`
	QB        *Tensor `gguf:"attn_q.bias"`
	K         *Tensor `gguf:"attn_k.weight"`
	KB        *Tensor `gguf:"attn_k.bias"`
	V         *Tensor `gguf:"attn_v.weight"`
	VB        *Tensor `gguf:"attn_v.bias"`
	QKV       *Tensor `gguf:"attn_qkv.weight"`
	QKVB      *Tensor `gguf:"attn_qkv.bias"`
	QNorm     *Tensor `gguf:"attn_q_norm.weight"` // per head dimension (QKNorm)
	KNorm     *Tensor `gguf:"attn_k_norm.weight"`
	Out       *Tensor `gguf:"attn_output.weight"`
	OutB      *Tensor `gguf:"attn_output.bias"`
	PostNorm  *Tensor `gguf:"post_attention_norm.weight"` // the attention output's norm (PostNorms)
	FFNNorm   *Tensor `gguf:"ffn_norm.weight"`
	FFNNormB  *Tensor `gguf:"ffn_norm.bias"`
	Gate      *Tensor `gguf:"ffn_gate.weight"`
	GateB     *Tensor `gguf:"ffn_gate.bias"`
	Up        *Tensor `gguf:"ffn_up.weight"`
	UpB       *Tensor `gguf:"ffn_up.bias"`
	Down      *Tensor `gguf:"ffn_down.weight"`
	DownB     *Tensor `gguf:"ffn_down.bias"`
	FFNPost   *Tensor `gguf:"post_ffw_norm.weight"` // the MLP output's norm (PostNorms)
}

// RopeFactors are the frequency factors a context of ctx positions uses
// (nil: none), as llama.cpp chooses them.
func (w *Weights) RopeFactors(c *Config, ctx int) *Tensor {
	switch {
	case w.RopeFreqs != nil:
		return w.RopeFreqs
	case ctx > c.RopeOrigCtx:
		return w.RopeLong
	}
	return w.RopeShort
}

// OutputMatrix is the output projection: Output, or the token embedding
// when the two are tied.
func (w *Weights) OutputMatrix() *Tensor {
	if w.Output != nil {
		return w.Output
	}
	return w.TokEmbd
}

var tensorType = reflect.TypeOf((*Tensor)(nil))

// bind fills the tagged fields of dst (a pointer to a struct) with the
// tensors named prefix+tag, failing on missing required ones.
func bind(f *gguf.File, dst reflect.Value, prefix string, spec *Spec, used map[string]bool) error {
	st := dst.Elem().Type()
	for i := 0; i < st.NumField(); i++ {
		tag := st.Field(i).Tag.Get("gguf")
		if tag == "" || st.Field(i).Type != tensorType {
			continue
		}
		name := prefix + tag
		ti, ok := f.Tensor(name)
		if ok && !spec.allows(tag) {
			return fmt.Errorf("tensor %s is not part of a %s model (ignoring it would give wrong numbers)", name, spec.Name)
		}
		if !ok {
			if slices.Contains(spec.Required, tag) {
				return fmt.Errorf("%s model: tensor %s is missing", spec.Name, name)
			}
			continue
		}
		dims := make([]int, len(ti.Dims))
		for j, d := range ti.Dims {
			dims[j] = int(d)
		}
		dst.Elem().Field(i).Set(reflect.ValueOf(&Tensor{Name: name, Type: ti.Type, Dims: dims, Data: f.TensorData(ti)}))
		used[name] = true
	}
	return nil
}

func bindWeights(f *gguf.File, spec *Spec, cfg *Config) (*Weights, error) {
	w := &Weights{Layers: make([]Layer, cfg.Layers)}
	used := map[string]bool{}
	if err := bind(f, reflect.ValueOf(w), "", spec, used); err != nil {
		return nil, err
	}
	for l := range w.Layers {
		if err := bind(f, reflect.ValueOf(&w.Layers[l]), fmt.Sprintf("blk.%d.", l), spec, used); err != nil {
			return nil, err
		}
	}
	for _, ti := range f.Tensors {
		if used[ti.Name] {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(ti.Name, "blk.%d.", &n); err == nil && n >= cfg.Layers {
			return nil, fmt.Errorf("tensor %s belongs to layer %d but the model has %d layers", ti.Name, n, cfg.Layers)
		}
		return nil, fmt.Errorf("tensor %s is not part of a %s model as this engine runs it (ignoring it would give wrong numbers)", ti.Name, spec.Name)
	}
	if cfg.Vocab == 0 {
		cfg.Vocab = w.TokEmbd.Rows()
	}
	return w, checkShapes(w, spec, cfg)
}

// checkShapes verifies every bound tensor against the hyperparameters, so
// the kernels can index without further checks.
func checkShapes(w *Weights, spec *Spec, c *Config) error {
	check := func(t *Tensor, want ...int) error {
		if t == nil {
			return nil
		}
		if !slices.Equal(t.Dims, want) {
			return fmt.Errorf("tensor %s has shape %v, want %v for this model's hyperparameters", t.Name, t.Dims, want)
		}
		return nil
	}
	vec := func(t *Tensor, n int) error {
		if err := check(t, n); err != nil {
			return err
		}
		if t != nil && t.Type != quant.F32 && t.Type != quant.F16 && t.Type != quant.BF16 {
			return fmt.Errorf("tensor %s is %s; norms and biases must be F32, F16 or BF16", t.Name, t.Type)
		}
		return nil
	}
	e, q, kv, ff, hd := c.Embd, c.QDim(), c.KVDim(), c.FFN, c.HeadDim
	factors := func(t *Tensor) error {
		if err := check(t, c.RopeDims/2); err != nil {
			return err
		}
		if t != nil && t.Type != quant.F32 {
			return fmt.Errorf("tensor %s is %s; RoPE factors must be F32", t.Name, t.Type)
		}
		return nil
	}
	errs := []error{
		check(w.TokEmbd, e, c.Vocab),
		check(w.Output, e, c.Vocab), vec(w.OutputB, c.Vocab),
		vec(w.OutNorm, e), vec(w.OutNormB, e),
		factors(w.RopeFreqs), factors(w.RopeLong), factors(w.RopeShort),
	}
	if (w.RopeLong == nil) != (w.RopeShort == nil) {
		errs = append(errs, fmt.Errorf("rope_factors_long and rope_factors_short: a file has both or neither"))
	}
	up := ff
	if spec.FFN == SwiGLUFused {
		up = 2 * ff
	}
	if spec.PosEmbd {
		errs = append(errs, check(w.PosEmbd, e, c.ContextLen))
	}
	for i := range w.Layers {
		L := &w.Layers[i]
		errs = append(errs,
			vec(L.AttnNorm, e), vec(L.AttnNormB, e),
			check(L.Q, e, q), vec(L.QB, q), check(L.K, e, kv), vec(L.KB, kv), check(L.V, e, kv), vec(L.VB, kv),
			check(L.QKV, e, q+2*kv), vec(L.QKVB, q+2*kv),
			vec(L.QNorm, hd), vec(L.KNorm, hd),
			check(L.Out, q, e), vec(L.OutB, e), vec(L.PostNorm, e),
			vec(L.FFNNorm, e), vec(L.FFNNormB, e),
			check(L.Gate, e, ff), vec(L.GateB, ff), check(L.Up, e, up), vec(L.UpB, up),
			check(L.Down, ff, e), vec(L.DownB, e), vec(L.FFNPost, e),
			checkLayout(i, L, spec),
		)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkLayout requires the projections a family's layout names, and
// nothing the forward pass would not read.
func checkLayout(i int, L *Layer, spec *Spec) error {
	sep := L.Q != nil && L.K != nil && L.V != nil
	partial := (L.Q != nil || L.K != nil || L.V != nil) && !sep
	fused := L.QKV != nil
	ok := !partial && (sep != fused)
	switch spec.QKV {
	case QKVSeparate:
		ok = ok && sep
	case QKVFused:
		ok = ok && fused
	}
	if !ok {
		return fmt.Errorf("layer %d: attention projections missing or mixed (a %s model has %s)", i, spec.Name, map[QKVLayout]string{
			QKVSeparate: "attn_q, attn_k and attn_v", QKVFused: "attn_qkv", QKVEither: "attn_qkv, or attn_q, attn_k and attn_v"}[spec.QKV])
	}
	if spec.FFN == SwiGLUFused && L.Gate != nil || spec.FFN == GELU && L.Gate != nil {
		return fmt.Errorf("layer %d: a %s model has no ffn_gate", i, spec.Name)
	}
	return nil
}

package model

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

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
	Layers   []Layer `gguf:"blk"`
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
	Out       *Tensor `gguf:"attn_output.weight"`
	OutB      *Tensor `gguf:"attn_output.bias"`
	FFNNorm   *Tensor `gguf:"ffn_norm.weight"`
	FFNNormB  *Tensor `gguf:"ffn_norm.bias"`
	Gate      *Tensor `gguf:"ffn_gate.weight"`
	GateB     *Tensor `gguf:"ffn_gate.bias"`
	Up        *Tensor `gguf:"ffn_up.weight"`
	UpB       *Tensor `gguf:"ffn_up.bias"`
	Down      *Tensor `gguf:"ffn_down.weight"`
	DownB     *Tensor `gguf:"ffn_down.bias"`
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
		if strings.HasPrefix(ti.Name, "blk.") && !used[ti.Name] {
			var n int
			if _, err := fmt.Sscanf(ti.Name, "blk.%d.", &n); err == nil && n >= cfg.Layers {
				return nil, fmt.Errorf("tensor %s belongs to layer %d but the model has %d layers", ti.Name, n, cfg.Layers)
			}
		}
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
	e, q, kv, ff := c.Embd, c.QDim(), c.KVDim(), c.FFN
	errs := []error{
		check(w.TokEmbd, e, c.Vocab),
		check(w.Output, e, c.Vocab),
		vec(w.OutNorm, e), vec(w.OutNormB, e),
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
			check(L.Out, q, e), vec(L.OutB, e),
			vec(L.FFNNorm, e), vec(L.FFNNormB, e),
			check(L.Gate, e, ff), vec(L.GateB, ff), check(L.Up, e, ff), vec(L.UpB, ff),
			check(L.Down, ff, e), vec(L.DownB, e),
		)
		if spec.FusedQKV && L.QKV == nil || !spec.FusedQKV && (L.Q == nil || L.K == nil || L.V == nil) {
			errs = append(errs, fmt.Errorf("layer %d: attention projections missing", i))
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

package model

import (
	"errors"
	"fmt"
	"strings"

	"stepthrough/engine/gguf"
	"stepthrough/engine/quant"
	"stepthrough/engine/tokenizer"
)

// Model is a loaded model: hyperparameters, weights (views of the mapped
// file) and tokenizer. It is read-only and safe to share between sessions.
type Model struct {
	Path      string
	File      *gguf.File
	Spec      *Spec
	Config    *Config
	Weights   *Weights
	Tokenizer *tokenizer.Tokenizer
	parent    *Model // FirstLayers: the model whose file and tensors this one shares
}

// Load opens and validates a GGUF model file.
func Load(path string) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := FromFile(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m.Path = path
	return m, nil
}

// FromFile builds a Model from a parsed file (which it then owns).
func FromFile(f *gguf.File) (*Model, error) {
	m, err := fromHeader(f)
	if err != nil {
		return nil, err
	}
	if err := checkFinite(fileTensors(f)); err != nil {
		return nil, err
	}
	return m, nil
}

// Check reports why the engine cannot run a file, from its header alone
// (a File from gguf.ParseHeader will do, so a download can be refused
// before it is fetched): the architecture, the hyperparameters, every
// tensor's name, type and shape and the tokenizer, checked as FromFile
// checks them. Only the weights' values (FromFile refuses non-finite
// ones) are left unread.
func Check(f *gguf.File) error {
	_, err := fromHeader(f)
	return err
}

// fromHeader is FromFile without reading the weights' values: its Model's
// tensors hold no data when f is a header.
func fromHeader(f *gguf.File) (*Model, error) {
	archV, ok := f.Get("general.architecture")
	if !ok {
		return nil, fmt.Errorf("metadata general.architecture: missing")
	}
	arch, _ := archV.V.(string)
	spec, ok := Lookup(arch)
	if !ok {
		return nil, fmt.Errorf("architecture %q is not supported (supported: %s)", arch, strings.Join(Architectures(), ", "))
	}
	if len(f.Tensors) == 0 {
		return nil, fmt.Errorf("the file has no weight tensors (a vocabulary-only file: tokenize and inspect read it, but it cannot run)")
	}
	cfg, err := readConfig(&metadata{f: f, arch: arch, read: map[string]bool{}}, spec)
	if err != nil {
		return nil, err
	}
	w, err := bindWeights(f, spec, cfg)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, err
	}
	if tok.Len() > cfg.Vocab {
		return nil, fmt.Errorf("tokenizer has %d tokens but the model's vocabulary is %d", tok.Len(), cfg.Vocab)
	}
	return &Model{File: f, Spec: spec, Config: cfg, Weights: w, Tokenizer: tok}, nil
}

// fileTensors are the file's tensors as Tensors (every one is bound: a
// tensor the model does not use is refused before this).
func fileTensors(f *gguf.File) []*Tensor {
	ts := make([]*Tensor, len(f.Tensors))
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		ts[i] = &Tensor{Name: ti.Name, Type: ti.Type, Data: f.TensorData(ti)}
	}
	return ts
}

// Close releases the model file (a FirstLayers model releases nothing:
// close the model it came from).
func (m *Model) Close() error {
	if m.parent != nil {
		return nil
	}
	return m.File.Close()
}

// FirstLayers is the model cut after its first n blocks, then its own
// final norm and output head: the draft of self-speculative decoding
// (the "early exit" drafts of LayerSkip and Draft & Verify), sharing the
// model's file, tensors and tokenizer, so it costs no memory. Params and
// TypeBytes still describe the whole file.
func (m *Model) FirstLayers(n int) (*Model, error) {
	if n < 1 || n >= m.Config.Layers {
		return nil, fmt.Errorf("a draft of the first %d layers: choose 1 to %d (the model has %d)", n, m.Config.Layers-1, m.Config.Layers)
	}
	cfg, w := *m.Config, *m.Weights
	cfg.Layers, w.Layers = n, m.Weights.Layers[:n:n]
	root := m
	if m.parent != nil {
		root = m.parent
	}
	return &Model{Path: fmt.Sprintf("%s (first %d layers)", m.Path, n), File: m.File, Spec: m.Spec, Config: &cfg, Weights: &w, Tokenizer: m.Tokenizer, parent: root}, nil
}

// TypeBytes sums tensor bytes by type.
func (m *Model) TypeBytes() map[quant.Type]uint64 { return typeBytes(m.File) }

// typeBytes sums a file's tensor bytes by type.
func typeBytes(f *gguf.File) map[quant.Type]uint64 {
	out := map[quant.Type]uint64{}
	for _, t := range f.Tensors {
		out[t.Type] += t.Size
	}
	return out
}

// Params is the number of weight elements.
func (m *Model) Params() uint64 {
	var n uint64
	for i := range m.File.Tensors {
		n += m.File.Tensors[i].Elements()
	}
	return n
}

// KVBytesPerToken is the F32 KV-cache size of one position, all layers.
func (m *Model) KVBytesPerToken() int {
	return 2 * m.Config.Layers * m.Config.KVDim() * 4
}

// ErrClosed is returned by every backend's runner whose loaded model was
// closed.
var ErrClosed = errors.New("the loaded model was closed")

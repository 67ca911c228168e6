package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"stepthrough/engine"
	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
	"stepthrough/engine/tokenizer"
)

// Inspection is inspect's --json output.
type Inspection struct {
	Path          string             `json:"path"`
	Architecture  string             `json:"architecture"`
	Name          string             `json:"name,omitempty"`
	Config        *model.Config      `json:"hyperparameters"`
	Params        uint64             `json:"params"`
	Tokenizer     TokenizerSummary   `json:"tokenizer"`
	BytesByType   map[string]uint64  `json:"bytes_by_type"`
	KVBytesPerTok int                `json:"kv_bytes_per_token"`
	Tensors       []TensorSummary    `json:"tensors"`
	Backend       engine.BackendInfo `json:"backend"`
	// Features are how the model's forward pass differs from llama's.
	Features []model.Feature `json:"differences_from_llama"`
	// VocabOnly says why only the tokenizer was read (a vocabulary-only
	// file, or an architecture the engine cannot run); empty otherwise.
	VocabOnly string `json:"vocab_only,omitempty"`
}

// TokenizerSummary describes a model's tokenizer.
type TokenizerSummary struct {
	Model  string `json:"model"`
	Pre    string `json:"pre,omitempty"`
	Tokens int    `json:"tokens"`
	Merges int    `json:"merges"`
	BOS    int32  `json:"bos"`
	EOS    int32  `json:"eos"`
	AddBOS bool   `json:"add_bos"`
}

// TensorSummary is one row of the tensor table.
type TensorSummary struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Shape []int  `json:"shape"`
	Bytes uint64 `json:"bytes"`
}

func runInspect(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "inspect", "--model PATH [--json]")
	path := fs.String("model", "", "GGUF model `file`")
	asJSON := fs.Bool("json", false, "print one JSON object")
	backend := backendFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkBackend(*backend); err != nil {
		return err
	}
	if err := required("model", *path); err != nil {
		return err
	}
	m, err := model.Load(*path)
	if err != nil {
		vf, verr := model.LoadVocab(*path)
		if verr != nil {
			return err
		}
		defer vf.Close()
		return inspectVocab(env, *path, *asJSON, vf, err)
	}
	defer m.Close()
	in := Inspection{
		Path: *path, Architecture: m.Spec.Name, Name: m.Config.Name, Config: m.Config, Params: m.Params(),
		Tokenizer:     summarize(m.Tokenizer),
		BytesByType:   map[string]uint64{},
		KVBytesPerTok: m.KVBytesPerToken(),
		Features:      m.Features(),
	}
	for t, b := range m.TypeBytes() {
		in.BytesByType[t.String()] = b
	}
	in.Tensors = tensorTable(m.File)
	// which device would run it: open the backend the same way generate does
	if b, info, err := engine.NewBackend(m, engine.Options{Backend: *backend, Context: 1}); err == nil {
		b.Close()
		in.Backend = info
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	c := m.Config
	w := env.Stdout
	fmt.Fprintf(w, "file:          %s\n", *path)
	fmt.Fprintf(w, "architecture:  %s (%s)\n", m.Spec.Name, c.Name)
	fmt.Fprintf(w, "parameters:    %s\n", model.HumanCount(in.Params))
	fmt.Fprintf(w, "context:       %d\nembedding:     %d\nlayers:        %d\n", c.ContextLen, c.Embd, c.Layers)
	fmt.Fprintf(w, "heads:         %d (KV heads %d, head size %d)\nfeed-forward:  %d\nvocabulary:    %d\n", c.Heads, c.KVHeads, c.HeadDim, c.FFN, c.Vocab)
	fmt.Fprintf(w, "norm epsilon:  %g\n", c.NormEps)
	if c.RopeDims > 0 {
		fmt.Fprintf(w, "RoPE:          %d dims, base %g\n", c.RopeDims, c.RopeBase)
	}
	printFeatures(w, m.Spec.Name, in.Features)
	printTokenizer(w, m.Tokenizer)
	fmt.Fprintf(w, "KV cache:      %d bytes per token (F32 K and V, all layers); %.1f MiB at %d tokens\n", in.KVBytesPerTok, float64(in.KVBytesPerTok*c.ContextLen)/(1<<20), c.ContextLen)
	printBackendAndTensors(w, in)
	return nil
}

// printFeatures lists how the family differs from llama, and why.
func printFeatures(w io.Writer, arch string, fs []model.Feature) {
	if len(fs) == 0 {
		fmt.Fprintf(w, "family:        %s, the llama block as is\n", arch)
		return
	}
	fmt.Fprintf(w, "family:        %s; differs from llama in:\n", arch)
	for _, f := range fs {
		fmt.Fprintf(w, "  - %s: %s\n", f.Name, f.Why)
	}
}

func summarize(tk *tokenizer.Tokenizer) TokenizerSummary {
	v := tk.Vocab()
	return TokenizerSummary{Model: v.Model, Pre: v.Pre, Tokens: len(v.Tokens), Merges: len(v.Merges), BOS: v.BOS, EOS: v.EOS, AddBOS: v.AddBOS}
}

func printTokenizer(w io.Writer, tk *tokenizer.Tokenizer) {
	v := tk.Vocab()
	pre := ""
	if v.Pre != "" {
		pre = ", pre-tokenizer " + v.Pre
	}
	fmt.Fprintf(w, "tokenizer:     %s%s, %d tokens, %d merges, BOS %d %q (added: %v), EOS %d %q\n", v.Model, pre, len(v.Tokens), len(v.Merges), v.BOS, tk.Piece(v.BOS), v.AddBOS, v.EOS, tk.Piece(v.EOS))
}

func tensorTable(f *gguf.File) []TensorSummary {
	var out []TensorSummary
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		shape := make([]int, len(ti.Dims))
		for j, d := range ti.Dims {
			shape[j] = int(d)
		}
		out = append(out, TensorSummary{ti.Name, ti.Type.String(), shape, ti.Size})
	}
	return out
}

// inspectVocab describes a file the engine can tokenize with but not run.
func inspectVocab(env Env, path string, asJSON bool, vf *model.VocabFile, why error) error {
	in := Inspection{Path: path, Architecture: vf.Architecture, Tokenizer: summarize(vf.Tokenizer), BytesByType: map[string]uint64{},
		Tensors: tensorTable(vf.File), VocabOnly: oneLine(why.Error())}
	for _, t := range in.Tensors {
		in.BytesByType[t.Type] += t.Bytes
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	w := env.Stdout
	fmt.Fprintf(w, "file:          %s\n", path)
	fmt.Fprintf(w, "architecture:  %s (tokenizer only: %s)\n", vf.Architecture, in.VocabOnly)
	printTokenizer(w, vf.Tokenizer)
	fmt.Fprintf(w, "tensors:       %d\n", len(in.Tensors))
	return nil
}

func printBackendAndTensors(w io.Writer, in Inspection) {
	var types []string
	for t := range in.BytesByType {
		types = append(types, t)
	}
	sort.Strings(types)
	fmt.Fprintf(w, "backend:       %s\n", in.Backend) // with the CPU kernels' level (BackendInfo.String)
	if in.Backend.Note != "" {
		fmt.Fprintf(w, "               (%s)\n", oneLine(in.Backend.Note))
	}
	fmt.Fprintf(w, "bytes by type:")
	for _, t := range types {
		fmt.Fprintf(w, " %s %.2f MiB;", t, float64(in.BytesByType[t])/(1<<20))
	}
	fmt.Fprintf(w, "\n\n%-32s %-5s %-16s %12s\n", "tensor", "type", "shape", "bytes")
	for _, t := range in.Tensors {
		shape := strings.Trim(strings.ReplaceAll(fmt.Sprint(t.Shape), " ", "×"), "[]")
		fmt.Fprintf(w, "%-32s %-5s %-16s %12d\n", t.Name, t.Type, shape, t.Bytes)
	}
}

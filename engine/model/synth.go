package model

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"stepthrough/engine/gguf"
	"stepthrough/engine/quant"
)

// SynthOptions describe a random-weight model: the shape of a real one
// without its training, for benchmarks and tests.
type SynthOptions struct {
	Arch                              string // a registered architecture: llama, gpt2, qwen2, qwen3, gemma2, gemma3, phi3
	Embd, Layers, Heads, KVHeads, FFN int
	HeadDim                           int // attention.key_length (0: Embd/Heads, and no key written)
	Vocab, Context                    int
	Type                              quant.Type // type of the weight matrices
	Tied                              bool       // no separate output matrix
	Seed                              uint64
	Name                              string
	// Tiny writes a minimal tokenizer (the special tokens and the letters,
	// a few words) instead of the byte-complete one: models of a few KB,
	// for fuzzing.
	Tiny bool
	// VocabFrom copies another model's tokenizer (every tokenizer.* key;
	// Vocab becomes its size): a random draft for a real target.
	VocabFrom *gguf.File

	// Family options, written only when set.
	FusedQKV bool // attn_qkv instead of attn_q/k/v (every family but gpt2 may; gpt2 always does)
	// Biases writes every optional bias the family's llama.cpp loader
	// reads: Q, K and V's (or attn_qkv's), and for llama attn_output's and
	// the MLP's, for qwen2 the logits' (output.bias).
	Biases bool
	// NoQKVBias leaves out the Q, K and V biases a family's files carry
	// (qwen2's), which the loader does not require.
	NoQKVBias    bool
	RopeFactors  bool    // phi3: LongRoPE long and short factors
	RopeBase     float32 // rope.freq_base
	LocalBase    float32 // rope.freq_base_swa
	Window       int     // attention.sliding_window
	SWAPeriod    int     // attention.sliding_window_pattern
	AttnSoftcap  float32 // attn_logit_softcapping
	FinalSoftcap float32 // final_logit_softcapping
	RopeScaling  string  // rope.scaling.type
	RopeFactor   float32 // rope.scaling.factor
	RopeOrigCtx  int     // rope.scaling.original_context_length
}

// Shapes are real models' shapes, for random-weight files of the same
// size and cost (benchmarks beside llama.cpp): F32 weights, seed 1.
var Shapes = map[string]SynthOptions{
	"smollm2-135m": {Arch: "llama", Embd: 576, Layers: 30, Heads: 9, KVHeads: 3, FFN: 1536, Vocab: 49152, Context: 8192, Tied: true, RopeBase: 1e5},
	"qwen2.5-0.5b": {Arch: "qwen2", Embd: 896, Layers: 24, Heads: 14, KVHeads: 2, FFN: 4864, Vocab: 151936, Context: 32768, Tied: true, RopeBase: 1e6},
	"qwen3-0.6b":   {Arch: "qwen3", Embd: 1024, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128, FFN: 3072, Vocab: 151936, Context: 40960, Tied: true, RopeBase: 1e6},
	"gemma3-270m": {Arch: "gemma3", Embd: 640, Layers: 18, Heads: 4, KVHeads: 1, HeadDim: 256, FFN: 2048, Vocab: 262144, Context: 32768, Tied: true,
		Window: 512, RopeBase: 1e6, LocalBase: 1e4},
}

// Synthesize builds a GGUF file with random weights (normal, std 0.02;
// norms near 1) and a small real tokenizer: SentencePiece-style for llama,
// byte-level BPE for gpt2, padded with unused control tokens to Vocab.
func Synthesize(o SynthOptions) (*gguf.Writer, error) {
	spec, ok := Lookup(o.Arch)
	if !ok {
		return nil, fmt.Errorf("synth: unknown architecture %q", o.Arch)
	}
	if o.KVHeads == 0 {
		o.KVHeads = o.Heads
	}
	if o.VocabFrom != nil {
		tv, ok := o.VocabFrom.Get("tokenizer.ggml.tokens")
		arr, isArr := tv.V.(gguf.Array)
		if !ok || !isArr {
			return nil, fmt.Errorf("synth: the vocabulary file has no tokenizer.ggml.tokens")
		}
		o.Vocab = arr.Len()
	}
	if o.Heads < 1 || o.HeadDim == 0 && o.Embd%o.Heads != 0 || o.Heads%o.KVHeads != 0 || o.Layers < 1 || o.FFN < 1 || o.Context < 1 {
		return nil, fmt.Errorf("synth: inconsistent shape (embd %d, heads %d/%d, layers %d, ffn %d, context %d)", o.Embd, o.Heads, o.KVHeads, o.Layers, o.FFN, o.Context)
	}
	if o.Name == "" {
		o.Name = fmt.Sprintf("random %s %dx%d", o.Arch, o.Layers, o.Embd)
	}
	w := gguf.NewWriter()
	a := o.Arch
	w.MustSet("general.architecture", a)
	w.MustSet("general.name", o.Name)
	w.MustSet(a+".context_length", uint32(o.Context))
	w.MustSet(a+".embedding_length", uint32(o.Embd))
	w.MustSet(a+".block_count", uint32(o.Layers))
	w.MustSet(a+".feed_forward_length", uint32(o.FFN))
	w.MustSet(a+".attention.head_count", uint32(o.Heads))
	w.MustSet(a+".attention.head_count_kv", uint32(o.KVHeads))
	if spec.Norm == RMSNorm {
		w.MustSet(a+".attention.layer_norm_rms_epsilon", float32(1e-5))
	} else {
		w.MustSet(a+".attention.layer_norm_epsilon", float32(1e-5))
	}
	synthFamilyKeys(w, o, spec)
	if o.VocabFrom != nil {
		for _, kv := range o.VocabFrom.KV {
			if strings.HasPrefix(kv.Key, "tokenizer.") {
				w.SetValue(kv.Key, kv.Value)
			}
		}
	} else if err := synthVocab(w, o, spec); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x5717))
	normal := func(n int, mean, std float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(mean + std*rng.NormFloat64())
		}
		return v
	}
	var err error
	matrix := func(name string, cols, rows int) {
		if err == nil {
			err = w.AddF32(name, o.Type, []uint64{uint64(cols), uint64(rows)}, normal(cols*rows, 0, 0.02))
		}
	}
	vector := func(name string, n int, mean, std float64) {
		if err == nil {
			err = w.AddF32(name, quant.F32, []uint64{uint64(n)}, normal(n, mean, std))
		}
	}
	hd := o.Embd / o.Heads
	if o.HeadDim != 0 {
		hd = o.HeadDim
	}
	q, kv := o.Heads*hd, o.KVHeads*hd
	fused := spec.QKV == QKVFused || spec.QKV == QKVEither && o.FusedQKV
	ln := spec.Norm == LayerNorm
	qkvBias := ln || o.Biases || spec.QKVBiases && !o.NoQKVBias
	llamaBias := o.Biases && spec.Name == "llama" // attn_output and the MLP's
	matrix("token_embd.weight", o.Embd, o.Vocab)
	if spec.PosEmbd {
		matrix("position_embd.weight", o.Embd, o.Context)
	}
	if spec.LongRoPE && o.RopeFactors {
		factors := func(name string, lo float64) {
			v := make([]float32, hd/2)
			for i := range v {
				v[i] = float32(lo + (lo+2)*float64(i)/float64(len(v))) // rising, as LongRoPE's are
			}
			if err == nil {
				err = w.AddF32(name, quant.F32, []uint64{uint64(len(v))}, v)
			}
		}
		factors("rope_factors_long.weight", 1)
		factors("rope_factors_short.weight", 0.5)
	}
	for l := 0; l < o.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		vector(p+"attn_norm.weight", o.Embd, 1, 0.1)
		if ln {
			vector(p+"attn_norm.bias", o.Embd, 0, 0.02)
		}
		if fused {
			matrix(p+"attn_qkv.weight", o.Embd, q+2*kv)
			if qkvBias {
				vector(p+"attn_qkv.bias", q+2*kv, 0, 0.02)
			}
		} else {
			matrix(p+"attn_q.weight", o.Embd, q)
			matrix(p+"attn_k.weight", o.Embd, kv)
			matrix(p+"attn_v.weight", o.Embd, kv)
			if qkvBias {
				vector(p+"attn_q.bias", q, 0, 0.5) // large, so a missing bias shows
				vector(p+"attn_k.bias", kv, 0, 0.5)
				vector(p+"attn_v.bias", kv, 0, 0.5)
			}
		}
		if spec.QKNorm {
			vector(p+"attn_q_norm.weight", hd, 1, 0.3)
			vector(p+"attn_k_norm.weight", hd, 1, 0.3)
		}
		matrix(p+"attn_output.weight", q, o.Embd)
		if ln || llamaBias {
			vector(p+"attn_output.bias", o.Embd, 0, 0.02)
		}
		if spec.PostNorms {
			vector(p+"post_attention_norm.weight", o.Embd, 1, 0.1)
		}
		vector(p+"ffn_norm.weight", o.Embd, 1, 0.1)
		if ln {
			vector(p+"ffn_norm.bias", o.Embd, 0, 0.02)
		}
		switch spec.FFN {
		case SwiGLU, GeGLU:
			matrix(p+"ffn_gate.weight", o.Embd, o.FFN)
			matrix(p+"ffn_up.weight", o.Embd, o.FFN)
			if llamaBias {
				vector(p+"ffn_gate.bias", o.FFN, 0, 0.02)
				vector(p+"ffn_up.bias", o.FFN, 0, 0.02)
			}
		case SwiGLUFused:
			matrix(p+"ffn_up.weight", o.Embd, 2*o.FFN)
		case GELU:
			matrix(p+"ffn_up.weight", o.Embd, o.FFN)
			vector(p+"ffn_up.bias", o.FFN, 0, 0.02)
		}
		matrix(p+"ffn_down.weight", o.FFN, o.Embd)
		if ln || llamaBias {
			vector(p+"ffn_down.bias", o.Embd, 0, 0.02)
		}
		if spec.PostNorms {
			vector(p+"post_ffw_norm.weight", o.Embd, 1, 0.1)
		}
	}
	vector("output_norm.weight", o.Embd, 1, 0.1)
	if ln {
		vector("output_norm.bias", o.Embd, 0, 0.02)
	}
	if !o.Tied {
		matrix("output.weight", o.Embd, o.Vocab)
	}
	if o.Biases && spec.OutputBias {
		vector("output.bias", o.Vocab, 0, 0.5) // large, so a missing bias shows
	}
	return w, err
}

// synthFamilyKeys writes the head size, RoPE and family keys the options set.
func synthFamilyKeys(w *gguf.Writer, o SynthOptions, spec *Spec) {
	a := o.Arch
	hd := o.Embd / max(1, o.Heads)
	if o.HeadDim != 0 {
		hd = o.HeadDim
		w.MustSet(a+".attention.key_length", uint32(hd))
		w.MustSet(a+".attention.value_length", uint32(hd))
	}
	if spec.Rope != RopeNone {
		w.MustSet(a+".rope.dimension_count", uint32(hd))
	}
	setF := func(key string, v float32) {
		if v != 0 {
			w.MustSet(a+"."+key, v)
		}
	}
	setU := func(key string, v int) {
		if v != 0 {
			w.MustSet(a+"."+key, uint32(v))
		}
	}
	setF("rope.freq_base", o.RopeBase)
	setF("rope.freq_base_swa", o.LocalBase)
	setU("attention.sliding_window", o.Window)
	setU("attention.sliding_window_pattern", o.SWAPeriod)
	setF("attn_logit_softcapping", o.AttnSoftcap)
	setF("final_logit_softcapping", o.FinalSoftcap)
	if o.RopeScaling != "" {
		w.MustSet(a+".rope.scaling.type", o.RopeScaling)
	}
	setF("rope.scaling.factor", o.RopeFactor)
	setU("rope.scaling.original_context_length", o.RopeOrigCtx)
}

var synthWords = strings.Fields(`the a and to of in was it he she they is on for with his her that
at as had but said day one there little big time once upon cat dog Lily Tom saw play park ball happy sad
red blue tree house mom friend went very not so what who when this then`)

func synthVocab(w *gguf.Writer, o SynthOptions, spec *Spec) error {
	var tokens []string
	var types []int32
	var scores []float32
	var merges []string
	seen := map[string]bool{}
	addTok := func(s string, typ int32) {
		if !seen[s] {
			seen[s] = true
			tokens = append(tokens, s)
			types = append(types, typ)
			scores = append(scores, -float32(len(tokens)))
		}
	}
	bos, eos := 1, 2
	words := synthWords
	if o.Tiny {
		words = []string{"fuzz", "me"}
	}
	spm := spec.Rope == RopeNorm || strings.HasPrefix(o.Arch, "gemma") || o.Arch == "phi3"
	if spm {
		addTok("<unk>", 2)
		addTok("<s>", 3)
		addTok("</s>", 3)
		if o.Arch == "phi3" {
			addTok("<|endoftext|>", 3) // llama.cpp looks it up in phi3 vocabularies
		}
		for b := 0; b < 256 && !o.Tiny; b++ {
			addTok(fmt.Sprintf("<0x%02X>", b), 6)
		}
		addTok("▁", 1)
		for c := 'a'; c <= 'z' && o.Tiny; c++ {
			addTok(string(c), 1)
		}
		for _, word := range words {
			piece := "▁" + word
			for i := len("▁") + 1; i <= len(piece); i++ { // every prefix is a token
				addTok(piece[:i], 1)
			}
		}
	} else {
		for b := 0; b < 256; b++ {
			if !o.Tiny || b == ' ' || (b >= 'a' && b <= 'z') {
				addTok(string(gpt2ByteRune(byte(b))), 1)
			}
		}
		for _, word := range words {
			chars := []rune("Ġ" + word)
			cur := string(chars[0])
			for _, c := range chars[1:] {
				if !seen[cur+string(c)] {
					merges = append(merges, cur+" "+string(c))
				}
				addTok(cur+string(c), 1)
				cur += string(c)
			}
		}
		addTok("<|endoftext|>", 3)
		bos, eos = len(tokens)-1, len(tokens)-1
	}
	if len(tokens) > o.Vocab {
		return fmt.Errorf("synth: vocabulary %d is smaller than the %d tokens of the built-in tokenizer", o.Vocab, len(tokens))
	}
	for i := len(tokens); i < o.Vocab; i++ {
		addTok(fmt.Sprintf("<unused%d>", i), 5)
	}
	if spm {
		w.MustSet("tokenizer.ggml.model", "llama")
		w.MustSet("tokenizer.ggml.scores", scores)
	} else {
		w.MustSet("tokenizer.ggml.model", "gpt2")
		w.MustSet("tokenizer.ggml.pre", map[bool]string{false: "gpt-2", true: "qwen2"}[strings.HasPrefix(o.Arch, "qwen")])
		w.MustSet("tokenizer.ggml.merges", merges)
	}
	w.MustSet("tokenizer.ggml.tokens", tokens)
	w.MustSet("tokenizer.ggml.token_type", types)
	w.MustSet("tokenizer.ggml.bos_token_id", uint32(bos))
	w.MustSet("tokenizer.ggml.eos_token_id", uint32(eos))
	return nil
}

func gpt2ByteRune(b byte) rune {
	n := 0
	for c := 0; c < 256; c++ {
		printable := (c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || (c >= 0xae && c <= 0xff)
		if c == int(b) {
			if printable {
				return rune(c)
			}
			return rune(256 + n)
		}
		if !printable {
			n++
		}
	}
	return 0
}

// Random synthesizes a model and loads it from memory.
func Random(o SynthOptions) (*Model, error) {
	w, err := Synthesize(o)
	if err != nil {
		return nil, err
	}
	f, err := gguf.ParseAligned(w.Bytes())
	if err != nil {
		return nil, err
	}
	return FromFile(f)
}

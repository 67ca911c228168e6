// Package tokenizer turns text into token ids and back, the way llama.cpp
// does for GGUF models: SentencePiece-style ("llama": score-ordered merges,
// ▁ for spaces, <0xXX> byte fallback) and byte-level BPE ("gpt2": the GPT-2
// byte↔unicode map, rank-ordered merges, a pre-tokenizer chosen by
// tokenizer.ggml.pre).
//
// Every token carries the exact bytes it stands for and its byte span in the
// input, so a token that holds only part of a UTF-8 character is shown as
// its bytes instead of U+FFFD.
//
// # Security
//
// Vocabularies come from untrusted model files. FromGGUF checks array types
// and lengths, token ids named by metadata, and merge entries, and returns an
// error naming the key instead of panicking.
package tokenizer

import (
	"fmt"
	"math"

	"stepthrough/engine/gguf"
)

// TokenType is the tokenizer.ggml.token_type of a vocabulary entry.
type TokenType int32

// Token types as llama.cpp numbers them.
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// Vocab is what a GGUF file says about its tokenizer.
type Vocab struct {
	Model  string // "llama" (SentencePiece) or "gpt2" (byte-level BPE)
	Pre    string // pre-tokenizer name for "gpt2" models
	Tokens []string
	Scores []float32   // SPM merge priorities; may be nil for BPE
	Types  []TokenType // may be nil: all normal
	Merges []string    // BPE merges "left right", index = rank

	BOS, EOS, UNK, EOT, PAD int32 // -1 when absent
	EOM                     int32 // end of message (tool call), -1 when absent
	// FIM are the fill-in-the-middle tokens set in the metadata (prefix,
	// suffix, middle, pad, repo, file separator), -1 when absent.
	FIM            [6]int32
	AddBOS, AddEOS bool
	AddSpacePrefix bool
	// ChatTemplate is tokenizer.chat_template: the Jinja template that
	// turns a list of messages into the model's prompt ("" when absent).
	ChatTemplate string
}

// Caps on vocabulary sizes read from a file.
const (
	maxVocab  = 1 << 22
	maxMerges = 1 << 23
	// maxChatTemplate bounds tokenizer.chat_template (real ones are a few KiB)
	maxChatTemplate = 1 << 20
)

// VocabFromGGUF reads the tokenizer.ggml.* keys of a model file.
func VocabFromGGUF(f *gguf.File) (*Vocab, error) {
	v := &Vocab{BOS: -1, EOS: -1, UNK: -1, EOT: -1, PAD: -1, EOM: -1, FIM: [6]int32{-1, -1, -1, -1, -1, -1}}
	model, err := getString(f, "tokenizer.ggml.model", true)
	if err != nil {
		return nil, err
	}
	v.Model = model
	if v.Pre, err = getString(f, "tokenizer.ggml.pre", false); err != nil {
		return nil, err
	}
	tokens, err := getArray[string](f, "tokenizer.ggml.tokens", true)
	if err != nil {
		return nil, err
	}
	if len(tokens) == 0 || len(tokens) > maxVocab {
		return nil, fmt.Errorf("tokenizer.ggml.tokens: %d tokens (1 to %d allowed)", len(tokens), maxVocab)
	}
	v.Tokens = tokens
	if v.Scores, err = getArray[float32](f, "tokenizer.ggml.scores", false); err != nil {
		return nil, err
	}
	if v.Scores != nil && len(v.Scores) != len(tokens) {
		return nil, fmt.Errorf("tokenizer.ggml.scores has %d entries for %d tokens", len(v.Scores), len(tokens))
	}
	types, err := getArray[int32](f, "tokenizer.ggml.token_type", false)
	if err != nil {
		return nil, err
	}
	if types != nil {
		if len(types) != len(tokens) {
			return nil, fmt.Errorf("tokenizer.ggml.token_type has %d entries for %d tokens", len(types), len(tokens))
		}
		v.Types = make([]TokenType, len(types))
		for i, t := range types {
			v.Types[i] = TokenType(t)
		}
	}
	if v.Merges, err = getArray[string](f, "tokenizer.ggml.merges", false); err != nil {
		return nil, err
	}
	if len(v.Merges) > maxMerges {
		return nil, fmt.Errorf("tokenizer.ggml.merges: %d merges exceeds %d", len(v.Merges), maxMerges)
	}
	switch model {
	case "llama":
		v.BOS, v.EOS, v.UNK = 1, 2, 0
		v.AddBOS, v.AddSpacePrefix = true, true
	case "gpt2", "gemma4":
		v.BOS, v.EOS = 11, 11
		if v.Merges == nil {
			return nil, fmt.Errorf("tokenizer.ggml.merges: missing for a %s tokenizer", model)
		}
		if model == "gemma4" {
			v.Pre = "gemma4" // llama.cpp sets it from the model name
		}
	default:
		return nil, fmt.Errorf("tokenizer.ggml.model %q is not supported (llama, gpt2 and gemma4 are)", model)
	}
	for _, id := range []struct {
		key string
		dst *int32
	}{
		{"tokenizer.ggml.bos_token_id", &v.BOS},
		{"tokenizer.ggml.eos_token_id", &v.EOS},
		{"tokenizer.ggml.unknown_token_id", &v.UNK},
		{"tokenizer.ggml.eot_token_id", &v.EOT},
		{"tokenizer.ggml.padding_token_id", &v.PAD},
		{"tokenizer.ggml.eom_token_id", &v.EOM},
		{"tokenizer.ggml.prefix_token_id", &v.FIM[fimPre]}, // the older names first, so the newer win
		{"tokenizer.ggml.suffix_token_id", &v.FIM[fimSuf]},
		{"tokenizer.ggml.middle_token_id", &v.FIM[fimMid]},
		{"tokenizer.ggml.fim_pre_token_id", &v.FIM[fimPre]},
		{"tokenizer.ggml.fim_suf_token_id", &v.FIM[fimSuf]},
		{"tokenizer.ggml.fim_mid_token_id", &v.FIM[fimMid]},
		{"tokenizer.ggml.fim_pad_token_id", &v.FIM[fimPad]},
		{"tokenizer.ggml.fim_rep_token_id", &v.FIM[fimRep]},
		{"tokenizer.ggml.fim_sep_token_id", &v.FIM[fimSep]},
	} {
		val, ok := f.Get(id.key)
		if !ok {
			continue
		}
		n, ok := val.Uint()
		if ok && (n == math.MaxUint32 || n == math.MaxUint64) {
			*id.dst = -1 // written as -1: no such token
			continue
		}
		if !ok || n >= uint64(len(tokens)) {
			return nil, fmt.Errorf("%s = %v is not a token id below %d", id.key, val, len(tokens))
		}
		*id.dst = int32(n)
	}
	if model == "gpt2" && preTokenizers[v.Pre].addBOS {
		v.AddBOS = true // llama.cpp's default for this pre-tokenizer; the file's add_bos_token wins
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{
		{"tokenizer.ggml.add_bos_token", &v.AddBOS},
		{"tokenizer.ggml.add_eos_token", &v.AddEOS},
		{"tokenizer.ggml.add_space_prefix", &v.AddSpacePrefix},
	} {
		val, ok := f.Get(b.key)
		if !ok {
			continue
		}
		x, ok := val.V.(bool)
		if !ok {
			return nil, fmt.Errorf("%s must be a bool, got %s", b.key, val.Type)
		}
		*b.dst = x
	}
	if model == "gemma4" {
		v.AddBOS = true // llama.cpp overrides a false add_bos_token for gemma4
	}
	if v.ChatTemplate, err = getString(f, "tokenizer.chat_template", false); err != nil {
		return nil, err
	}
	if len(v.ChatTemplate) > maxChatTemplate {
		return nil, fmt.Errorf("tokenizer.chat_template: %d bytes exceeds %d", len(v.ChatTemplate), maxChatTemplate)
	}
	for _, id := range []*int32{&v.BOS, &v.EOS, &v.UNK} {
		if *id >= int32(len(tokens)) {
			*id = -1 // a default that does not exist in this small vocabulary
		}
	}
	return v, nil
}

func getString(f *gguf.File, key string, required bool) (string, error) {
	val, ok := f.Get(key)
	if !ok {
		if required {
			return "", fmt.Errorf("%s: missing", key)
		}
		return "", nil
	}
	s, ok := val.V.(string)
	if !ok {
		return "", fmt.Errorf("%s must be a string, got %s", key, val.Type)
	}
	return s, nil
}

func getArray[T any](f *gguf.File, key string, required bool) ([]T, error) {
	val, ok := f.Get(key)
	if !ok {
		if required {
			return nil, fmt.Errorf("%s: missing", key)
		}
		return nil, nil
	}
	a, ok := val.V.(gguf.Array)
	if !ok {
		return nil, fmt.Errorf("%s must be an array, got %s", key, val.Type)
	}
	d, ok := a.Data.([]T)
	if !ok {
		var zero T
		return nil, fmt.Errorf("%s must be an array of %T, got %s elements", key, zero, a.Elem)
	}
	return d, nil
}

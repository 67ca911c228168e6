package model

import (
	"fmt"

	"stepthrough/engine/gguf"
	"stepthrough/engine/tokenizer"
)

// VocabFile is a GGUF file opened for its tokenizer alone: it needs no
// weights and no supported architecture, so it reads vocabulary-only
// files (llama.cpp's tokenizer tests ship such files) and models whose
// architecture the engine cannot run.
type VocabFile struct {
	Path         string
	File         *gguf.File
	Architecture string // general.architecture, as written (may be empty)
	Tokenizer    *tokenizer.Tokenizer
}

// LoadVocab opens path and builds its tokenizer.
func LoadVocab(path string) (*VocabFile, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	arch := ""
	if v, ok := f.Get("general.architecture"); ok {
		arch, _ = v.V.(string)
	}
	return &VocabFile{Path: path, File: f, Architecture: arch, Tokenizer: tok}, nil
}

// Close releases the file.
func (v *VocabFile) Close() error { return v.File.Close() }

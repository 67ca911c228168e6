//go:build !unix

package gguf

import (
	"fmt"
	"os"
)

// Open reads the file at path once into memory and parses it.
func Open(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Package modelstest gives tests a model registry that offers the
// embedded lesson models (lesson.gguf, lesson-draft.gguf, lesson-qwen3.gguf
// and lesson-v3.gguf), closed when the test ends.
package modelstest

import (
	"testing"

	"stepthrough/models"
	"stepthrough/registry"
)

// Lesson is a registry of the embedded lesson models.
func Lesson(t testing.TB) *registry.Registry {
	t.Helper()
	reg := registry.New(nil)
	for name, data := range models.Embedded() {
		reg.AddEmbedded(name, data)
	}
	t.Cleanup(reg.Close)
	return reg
}

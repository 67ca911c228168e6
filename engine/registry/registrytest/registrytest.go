// Package registrytest gives tests a model registry that offers the
// embedded lesson models (lesson.gguf and lesson-draft.gguf), closed when
// the test ends.
package registrytest

import (
	"testing"

	"stepthrough/engine/registry"
	"stepthrough/models"
)

// Lesson is a registry of the embedded lesson models.
func Lesson(t testing.TB) *registry.Registry {
	t.Helper()
	reg := registry.New(nil)
	reg.AddEmbedded("lesson.gguf", models.Lesson)
	reg.AddEmbedded("lesson-draft.gguf", models.LessonDraft)
	t.Cleanup(reg.Close)
	return reg
}

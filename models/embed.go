// Package models embeds the lesson models made by `stepthrough
// train-lesson` (see README.md), so the app runs offline on its own model.
package models

import _ "embed"

// Lesson is models/lesson.gguf: the app's default model.
//
//go:embed lesson.gguf
var Lesson []byte

// LessonDraft is models/lesson-draft.gguf: the small draft model.
//
//go:embed lesson-draft.gguf
var LessonDraft []byte

// LessonQwen3 is models/lesson-qwen3.gguf: a qwen3-family model trained on
// the same corpus with the same tokenizer (`train-lesson --family`), for
// the Families lesson.
//
//go:embed lesson-qwen3.gguf
var LessonQwen3 []byte

// LessonV3 is models/lesson-v3.gguf: the lesson model trained further on
// text that repeats itself (`train-lesson --copying --init lesson.gguf`),
// so that it has induction heads to find and switch off.
//
//go:embed lesson-v3.gguf
var LessonV3 []byte

// Embedded is every embedded model by the file name the app offers it
// under.
func Embedded() map[string][]byte {
	return map[string][]byte{"lesson.gguf": Lesson, "lesson-draft.gguf": LessonDraft, "lesson-qwen3.gguf": LessonQwen3, "lesson-v3.gguf": LessonV3}
}

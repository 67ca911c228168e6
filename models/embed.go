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

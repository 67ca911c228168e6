package server

import (
	"net/http/httptest"
	"testing"
)

// The self-study player asks a question with the text it is about, as a
// room does: the prompt, then what the model wrote before the question's
// token step (set apart), never the token asked for.
func TestLessonQuestionShowsItsText(t *testing.T) {
	s := mustNew(t, Config{Embedded: lessonModels()})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	for _, tt := range []struct {
		path, text, written string
	}{
		{"/lessons/the-head-that-copies/1", " Ab dog movie hill fox Port Sa gave Dom Eurcebab Ab dog movie hill fox Port", ""},
		{"/lessons/what-is-inference/2", "The capital of France is", ""},
		{"/lessons/what-is-inference/3", "The capital of France is Par", " Par"}, // at the sample stage of token step 1: "is" is drawn, not shown
	} {
		doc := get(t, ts.URL+tt.path)
		q := doc.Find(`[data-testid="question"] [data-testid="question-prompt"]`)
		if got, written := q.Find("code").Text(), q.Find(`[data-testid="so-far-generated"]`).Text(); q.Length() != 1 || got != tt.text || written != tt.written {
			t.Errorf("%s: the question's text %q (written %q), want %q (%q)", tt.path, got, written, tt.text, tt.written)
		}
	}
}

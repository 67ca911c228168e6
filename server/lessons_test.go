package server

import (
	"fmt"
	"net/http/httptest"
	"net/url"
	"testing"

	"stepthrough/lessons"
	"stepthrough/models"
)

// Every step of every built-in lesson plays on the embedded lesson model:
// the page shows the step's stage, no error, and links onward.
func TestBuiltinLessonsPlay(t *testing.T) {
	s := New(Config{Embedded: map[string][]byte{"lesson.gguf": models.Lesson}})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	list := get(t, ts.URL+"/lessons")
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if n := list.Find(`[data-testid="lesson"]`).Length(); n != len(all) {
		t.Fatalf("lesson list shows %d lessons, want %d", n, len(all))
	}
	for _, name := range lessons.Names(all) {
		l := all[name]
		for i, st := range l.Steps {
			doc := get(t, fmt.Sprintf("%s/lessons/%s?step=%d", ts.URL, name, i))
			if e := doc.Find(`[data-testid="error"]`); e.Length() > 0 {
				t.Fatalf("%s step %d: error %q", name, i+1, e.Text())
			}
			if got, _ := doc.Find(`section[data-stage]`).Attr("data-stage"); got != st.Stage {
				t.Errorf("%s step %d: stage %q, want %q", name, i+1, got, st.Stage)
			}
			if got, _ := doc.Find(`[data-testid="lesson-step"]`).Attr("data-step"); got != fmt.Sprint(i) {
				t.Errorf("%s step %d: data-step %q", name, i+1, got)
			}
			if (i+1 < len(l.Steps)) != (doc.Find(`a[data-action="step"]`).Length() == 1) {
				t.Errorf("%s step %d: next link wrong", name, i+1)
			}
			if q := st.Question; q != nil {
				if doc.Find(`[data-testid="question"]`).Length() != 1 {
					t.Fatalf("%s step %d: question missing", name, i+1)
				}
				ans := "x"
				if len(q.Choices) > 0 {
					ans = q.Choices[0]
				}
				if q.Kind == "choice" {
					ans = q.Answer
				}
				a := get(t, fmt.Sprintf("%s/lessons/%s?step=%d&answer=%s", ts.URL, name, i, url.QueryEscape(ans)))
				fb := a.Find(`[data-testid="feedback"]`)
				if fb.Length() != 1 || fb.Text() == "" {
					t.Fatalf("%s step %d: no feedback after answering", name, i+1)
				}
				if c, _ := fb.Attr("data-correct"); q.Kind == "choice" && c != "true" {
					t.Errorf("%s step %d: the lesson's own answer was marked %q", name, i+1, c)
				}
			}
		}
	}
	// The seeds lesson claims two seeds draw different tokens and that a
	// seed repeats its draw; the engine must agree.
	tok := func(step int) string {
		v, _ := get(t, fmt.Sprintf("%s/lessons/seeds?step=%d", ts.URL, step)).Find(`[data-testid="sampled-token"]`).Attr("data-token-id")
		return v
	}
	if a, b := tok(0), tok(1); a == "" || a == b || tok(0) != a {
		t.Errorf("seeds lesson: seed 1 drew %q, seed 2 drew %q; want different, repeatable draws", a, b)
	}
	// Hostile or odd requests answer without panicking.
	get(t, ts.URL+"/lessons/logits-and-softmax?step=-5")
	get(t, ts.URL+"/lessons/logits-and-softmax?step=99999999999999999999")
}

package classroom

import (
	"bytes"
	"context"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"stepthrough/lessons"
	"stepthrough/models/modelstest"
)

// A room asks each prediction question with the text it is about, on
// every follower's screen (the projector's and the phones' are the same
// frame): the prompt, then what the model wrote before this token step;
// never the token the question asks for, even at the sample stage where
// it is already drawn.
func TestRoomQuestionShowsItsText(t *testing.T) {
	reg := modelstest.Lesson(t)
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	cl := New(Config{Engines: reg, Lessons: all})
	t.Cleanup(cl.Close)
	for _, tt := range []struct {
		lesson  string
		step    int
		written bool // the model wrote tokens before the question's step
	}{
		{"the-head-that-copies", 0, false},          // next-token, at the prompt's softmax stage
		{"what-is-inference", 1, false},             // next-token, at the logits
		{"what-is-inference", 2, true},              // the sample stage of token step 1
		{"stop-conditions", 0, true},                // the sample stage of token step 10
		{"speculative-decoding", 5, true},           // a speculative round's accept stage
		{"chat-and-stop-tokens", 1, false},          // a chat template's markup in the prompt
		{"continuous-batching-and-memory", 0, true}, // the KV stage of token step 1
	} {
		t.Run(tt.lesson, func(t *testing.T) {
			r, _, err := cl.Create(t.Context(), tt.lesson+string(rune('0'+tt.step)), tt.lesson, nil)
			if err != nil {
				t.Fatal(err)
			}
			var frame []byte
			var want, withToken string
			err = r.do(t.Context(), func() {
				if err = r.gotoLessonStep(context.Background(), tt.step); err != nil {
					return
				}
				if err = r.render(); err != nil {
					return
				}
				frame = r.shown
				sn := r.se.Snapshot()
				step, _ := sn.Cursor.Position()
				tk := sn.Model.Tokenizer
				want = sn.Spec.Prompt + tk.Decode(sn.Gen[:sn.GenBefore(step)])
				withToken = sn.Spec.Prompt + tk.Decode(sn.Gen[:sn.GenBefore(step+1)])
			})
			if err != nil {
				t.Fatal(err)
			}
			doc, err := goquery.NewDocumentFromReader(bytes.NewReader(frame))
			if err != nil {
				t.Fatal(err)
			}
			q := doc.Find(`[data-testid="poll"] [data-testid="question-prompt"] code`)
			if q.Length() != 1 {
				t.Fatalf("step %d: %d question texts in the room's frame, want 1", tt.step+1, q.Length())
			}
			t.Logf("step %d asks about %q (with its token: %q)", tt.step+1, q.Text(), withToken)
			if got := q.Text(); got != want {
				t.Errorf("step %d: the question's text is %q, want %q", tt.step+1, got, want)
			}
			if written := doc.Find(`[data-testid="so-far-generated"]`).Text() != ""; written != tt.written {
				t.Errorf("step %d: what the model wrote is set apart: %v, want %v", tt.step+1, written, tt.written)
			}
			if q.Text() == withToken && withToken != want {
				t.Errorf("step %d: the question's text gives away this step's token: %q", tt.step+1, q.Text())
			}
		})
	}
}

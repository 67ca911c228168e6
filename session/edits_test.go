package session

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/hooks"
	"stepthrough/models/modelstest"
	"stepthrough/spec"
)

// A run that does not fit the context is refused before its mean
// ablation and steering take their passes: no forward pass runs.
func TestContextRefusedBeforeMeansAndSteering(t *testing.T) {
	se := New("e", "", modelstest.Lesson(t))
	defer se.Close()
	for _, tt := range []struct {
		name   string
		edit   func(*spec.Run)
		want   string // "" for a run that fits
		passes bool
	}{
		{"prompt and new tokens past the context", func(r *spec.Run) { r.MaxTokens = spec.MaxNewTokens },
			"the prompt is 5 tokens; with 512 new ones that exceeds the context of 512", false},
		{"mean-over text past the context", func(r *spec.Run) { r.MeanOver = strings.Repeat("zq", 500) },
			"mean ablation: a reference text of 1001 tokens (at most 512 here)", false},
		{"fits", func(*spec.Run) {}, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := run("Once upon a time")
			r.MaxTokens = 4
			if err := r.SetInterventions("L1H1", "L2:happy day|sad night*4", "a cat sat on the mat"); err != nil {
				t.Fatal(err)
			}
			tt.edit(&r)
			passes := 0
			ctx := hooks.WithHooks(context.Background(), &hooks.Hooks{OnEmbed: func(hooks.Embed) { passes++ }})
			err := se.Run(ctx, r)
			got := ""
			var e *Error
			if errors.As(err, &e) {
				got = e.Error()
			} else if err != nil {
				t.Fatalf("run: %v, want a session error", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if (passes > 0) != tt.passes {
				t.Errorf("%d forward passes; want passes: %v", passes, tt.passes)
			}
		})
	}
}

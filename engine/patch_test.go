package engine_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/hooks"
	"stepthrough/engine/intervene"
)

// Activation patching on the lesson model, France against Japan: patching
// the last layer's residual at the last position restores all of the
// clean answer's lead (it is what the logits are made from), at any other
// position nothing (nothing after the last layer reads it); the patched
// passes are the engine's own, so the corrupted and clean runs' figures
// are its logits. Prompts of other lengths, or that agree, are refused.
func TestPatch(t *testing.T) {
	m, l := lessonCPU(t)
	ctx := context.Background()
	clean := m.Tokenizer.EncodeIDs("The capital of France is", true)
	corrupt := m.Tokenizer.EncodeIDs("The capital of Japan is", true)
	p, err := l.Patch(ctx, clean, corrupt)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Restored) != m.Config.Layers || len(p.Restored[0]) != len(clean) {
		t.Fatalf("a %d × %d grid", len(p.Restored), len(p.Restored[0]))
	}
	if got := m.Tokenizer.Display(p.Good) + "/" + m.Tokenizer.Display(p.Bad); got != " Par/ T" {
		t.Errorf("answers %q", got)
	}
	if !(p.CleanDiff > 0 && p.CorruptDiff < 0) {
		t.Errorf("lead of the clean answer: %g clean, %g corrupted", p.CleanDiff, p.CorruptDiff)
	}
	last := p.Restored[m.Config.Layers-1]
	for pos, r := range last {
		want := 0.0
		if pos == len(clean)-1 {
			want = 1
		}
		if math.Abs(r-want) > 1e-6 {
			t.Errorf("last layer, position %d: restored %g, want %g", pos+1, r, want)
		}
	}
	// the first position (BOS) is the same in both prompts: patching it restores nothing
	for layer, row := range p.Restored {
		if math.Abs(row[0]) > 1e-6 {
			t.Errorf("layer %d, the shared first position: restored %g", layer+1, row[0])
		}
	}
	for _, bad := range [][2]string{{"The capital of France is", "The capital of Spain is"}, {"The capital of France is", "The capital of France is"}} {
		_, err := l.Patch(ctx, m.Tokenizer.EncodeIDs(bad[0], true), m.Tokenizer.EncodeIDs(bad[1], true))
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q vs %q: %v", bad[0], bad[1], err)
		}
	}
}

// A steering text longer than the session's cache is refused before any
// pass runs (the other text's included), naming both lengths.
func TestSteerTextPastContext(t *testing.T) {
	_, l := lessonCPU(t)
	s, err := l.NewSession(8)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	long := strings.Repeat("zq", 10) // 20 tokens
	for _, tt := range []struct {
		name, toward, away, want string
	}{
		{"toward too long", long, "sad", "steering: texts of 20 and 2 tokens (at most 8 here)"},
		{"away too long", "happy", long, "steering: texts of 3 and 20 tokens (at most 8 here)"},
		{"both fit", "happy", "sad", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			passes := 0
			ctx := hooks.WithHooks(context.Background(), &hooks.Hooks{OnEmbed: func(hooks.Embed) { passes++ }})
			_, err := s.SteerEdit(ctx, intervene.Steer{Layer: 1, Toward: tt.toward, Away: tt.away, Strength: 4})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if want := map[bool]int{true: 0, false: 2}[tt.want != ""]; passes != want {
				t.Errorf("%d forward passes, want %d", passes, want)
			}
		})
	}
}

package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine"
	"stepthrough/engine/sample"
)

// Continue, the one generation loop: it ends where the stop rule says
// (end of generation, a stop string, the limit, the caller), emits each
// token once and feeds back all but the last; a sampler and a choice give
// the same greedy tokens.
func TestContinue(t *testing.T) {
	m := lessonModel()
	defer m.Close()
	l, err := engine.Load(m, engine.Options{Backend: "cpu", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	prompt := m.Tokenizer.EncodeIDs("The capital of France is", true)

	// the reference: greedy to the end of generation
	ref := run(t, l, prompt, engine.Gen{Limits: engine.Limits{MaxTokens: 64}, Choose: engine.Argmax})
	if ref.finish != engine.FinishEOS || len(ref.ids) < 3 {
		t.Fatalf("greedy reference: %d tokens, finish %q", len(ref.ids), ref.finish)
	}
	text := textOf(m.Tokenizer.Bytes, ref.ids)
	greedy := sample.Defaults()
	greedy.Temperature, greedy.SeedSet = 0, true
	smp, err := sample.New(greedy)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		gen  engine.Gen
		want outcome
	}{
		{name: "sampler at T = 0", gen: engine.Gen{Limits: engine.Limits{MaxTokens: 64}, Sampler: smp}, want: ref},
		{name: "limit", gen: engine.Gen{Limits: engine.Limits{MaxTokens: 2}, Choose: engine.Argmax},
			want: outcome{ids: ref.ids[:2], finish: engine.FinishLength, evals: 1}},
		{name: "stop string", gen: engine.Gen{Limits: engine.Limits{MaxTokens: 64, Stops: []string{text[2:5]}}, Choose: engine.Argmax},
			want: stopAt(m.Tokenizer.Bytes, ref.ids, text[2:5])},
		{name: "caller", gen: engine.Gen{Limits: engine.Limits{MaxTokens: 64}, Choose: engine.Argmax, Emit: func(int32, []float32) error { return engine.ErrStop }},
			want: outcome{ids: ref.ids[:1], finish: engine.FinishCaller}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, run(t, l, prompt, c.gen), cmp.AllowUnexported(outcome{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	t.Run("emit error", func(t *testing.T) {
		boom := errors.New("boom")
		s, _ := l.NewSession(0)
		defer s.Close()
		logits, _ := s.Eval(ctx, prompt)
		if _, err := s.Continue(ctx, logits, engine.Gen{Limits: engine.Limits{MaxTokens: 4}, Choose: engine.Argmax,
			Emit: func(int32, []float32) error { return boom }}); !errors.Is(err, boom) {
			t.Errorf("got %v, want the emit's error", err)
		}
	})
}

// outcome is what one Continue produced.
type outcome struct {
	ids    []int32
	finish string
	evals  int // passes after the prompt's
}

func run(t *testing.T, l *engine.Loaded, prompt []int32, g engine.Gen) outcome {
	t.Helper()
	s, err := l.NewSession(0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	logits, err := s.Eval(context.Background(), prompt)
	if err != nil {
		t.Fatal(err)
	}
	var o outcome
	emit := g.Emit
	g.Emit = func(id int32, lg []float32) error {
		o.ids = append(o.ids, id)
		if emit != nil {
			return emit(id, lg)
		}
		return nil
	}
	if o.finish, err = s.Continue(context.Background(), logits, g); err != nil {
		t.Fatal(err)
	}
	o.evals = s.Pos() - len(prompt)
	return o
}

func textOf(bytes func(int32) []byte, ids []int32) string {
	var b []byte
	for _, id := range ids {
		b = append(b, bytes(id)...)
	}
	return string(b)
}

// stopAt is the greedy reply cut at the first token completing stop.
func stopAt(bytes func(int32) []byte, ids []int32, stop string) outcome {
	for i := range ids {
		if full := textOf(bytes, ids[:i+1]); len(full) >= len(stop) {
			if strings.Contains(full, stop) {
				return outcome{ids: ids[:i+1], finish: engine.FinishStop, evals: i}
			}
		}
	}
	return outcome{}
}

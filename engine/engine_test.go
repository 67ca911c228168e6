package engine

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"stepthrough/engine/model"
	"stepthrough/engine/reftest"
)

func stories(t *testing.T) *model.Model {
	m, err := model.Load(reftest.Path(t, "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func greedyText(t *testing.T, m *model.Model, prompt []int32, n int) []int32 {
	s, err := NewSession(m, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []int32
	if err := s.Greedy(context.Background(), prompt, n, func(id int32) error { out = append(out, id); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// 64 greedy tokens after "Once upon a time" give llama.cpp's text exactly.
func TestGreedyMatchesLlamaCpp(t *testing.T) {
	m := stories(t)
	want, err := os.ReadFile(reftest.Path(t, "models", "stories260K", "greedy64.llama-cpp.txt"))
	if err != nil {
		t.Fatal(err)
	}
	prompt := m.Tokenizer.EncodeIDs("Once upon a time", true)
	gen := greedyText(t, m, prompt, 64)
	got := m.Tokenizer.Decode(append(prompt[1:], gen...))
	// llama-cli ends its output with newlines of its own
	if got != strings.TrimRight(string(want), "\n") {
		t.Errorf("greedy text:\n got  %q\n want %q", got, want)
	}
}

// 200 steps from BOS alone give llama2.c's text (llama2.c drops the space
// after BOS and ends with a newline).
// The ids of the first 32 greedy tokens are llama.cpp's.
func TestGreedyIDsMatchLlamaCpp(t *testing.T) {
	m := stories(t)
	b, err := os.ReadFile(reftest.Path(t, "models", "stories260K", "once-upon.greedy32.txt"))
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "ids: ")
	gen := greedyText(t, m, m.Tokenizer.EncodeIDs("Once upon a time", true), 32)
	if got := strings.Trim(fmt.Sprint(gen), "[]"); got != line {
		t.Errorf("ids:\n got  %s\n want %s", got, line)
	}
}

func TestGreedyMatchesLlama2c(t *testing.T) {
	m := stories(t)
	want, err := os.ReadFile(reftest.Path(t, "models", "stories260K", "greedy200.llama2c.txt"))
	if err != nil {
		t.Fatal(err)
	}
	gen := greedyText(t, m, []int32{1}, 200)
	got := strings.TrimPrefix(m.Tokenizer.Decode(gen), " ")
	if strings.TrimRight(got, "\n") != strings.TrimRight(string(want), "\n") {
		t.Errorf("greedy text:\n got  %q\n want %q", got, want)
	}
}

// Load refuses what it cannot run: a negative thread count, an unknown
// backend — one line naming the value.
func TestLoadRefusesBadOptions(t *testing.T) {
	m := stories(t)
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{Threads: -1, Backend: "cpu"}, "threads -1"},
		{Options{Backend: "gpu"}, `unknown backend "gpu"`},
	} {
		l, err := Load(m, tc.opt)
		if err == nil {
			l.Close()
			t.Fatalf("%+v: loaded", tc.opt)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want it to name %q", tc.opt, err, tc.want)
		}
	}
}

package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// quantize writes a smaller model that still generates the same greedy
// text at 8 bits; refusals are one line with their exit status.
func TestQuantizeCommand(t *testing.T) {
	src := "../models/lesson.gguf"
	out := filepath.Join(t.TempDir(), "q8.gguf")
	stdout, stderr, code := run(t, "quantize", "--model", src, "--out", out, "--type", "q8_0")
	if code != 0 || !strings.Contains(stdout, "Q8_0") || !strings.Contains(stderr, "100%") {
		t.Fatalf("quantize: exit %d\n%s\n%s", code, stdout, stderr)
	}
	want, _, _ := run(t, "generate", "--model", src, "--prompt", "The capital of France is", "-n", "8", "--temperature", "0", "--ids", "-t", "1")
	got, _, _ := run(t, "generate", "--model", out, "--prompt", "The capital of France is", "-n", "8", "--temperature", "0", "--ids", "-t", "1")
	if got != want {
		t.Errorf("greedy text at Q8_0: %q, source %q", got, want)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--model", out, "--out", filepath.Join(t.TempDir(), "x.gguf"), "--type", "q4_k"}, 1, "already quantized"},
		{[]string{"--model", src, "--out", src, "--type", "q4_k"}, 1, "is the input"},
		{[]string{"--model", src, "--out", filepath.Join(t.TempDir(), "x.gguf"), "--type", "q3_k"}, 2, "choose one of"},
		{[]string{"--model", src, "--type", "q4_k"}, 2, "--out"},
	} {
		_, e, c := run(t, append([]string{"quantize"}, tt.args...)...)
		if c != tt.code || !strings.Contains(e, tt.want) || strings.Count(strings.TrimSpace(e), "\n") > 0 {
			t.Errorf("quantize %v: exit %d, %q; want exit %d with %q", tt.args, c, e, tt.code, tt.want)
		}
	}
}

// perplexity reports the model's perplexity on the lesson corpus's
// held-out text and, against itself as the base, KL 0 and the same top
// token everywhere.
func TestPerplexityCommand(t *testing.T) {
	src := "../models/lesson.gguf"
	out, errOut, code := run(t, "perplexity", "--model", src, "--kl-base", src, "--lesson-heldout", "8000", "-t", "1")
	if code != 0 || !strings.Contains(out, "perplexity ") || !strings.Contains(out, "mean KL 0.000000") || !strings.Contains(out, "same top token 100.00%") {
		t.Errorf("perplexity: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, e, c := run(t, "perplexity", "--model", src); c != 2 || !strings.Contains(e, "--file or --lesson-heldout") {
		t.Errorf("no text: exit %d, %q", c, e)
	}
}

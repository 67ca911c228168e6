package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stepthrough/engine/trace"
)

// generate --draft gives the target's greedy text and prints the draft's
// statistics; a draft with another vocabulary and a bad k are refused in
// one line; bench --draft measures both side by side.
func TestSpeculativeCommands(t *testing.T) {
	target, draft := "../models/lesson.gguf", "../models/lesson-draft.gguf"
	plain, _, code := run(t, "generate", "--model", target, "--prompt", "The capital of France is", "-n", "24", "--temperature", "0", "--ids", "-t", "1")
	spec, errOut, code2 := run(t, "generate", "--model", target, "--draft", draft, "--draft-k", "3", "--prompt", "The capital of France is", "-n", "24", "--temperature", "0", "--ids", "-t", "1")
	if code != 0 || code2 != 0 || plain != spec {
		t.Errorf("greedy with a draft %q (exit %d), without %q (exit %d)", spec, code2, plain, code)
	}
	if !strings.Contains(errOut, "draft: ") || !strings.Contains(errOut, "accepted (") {
		t.Errorf("no draft statistics on stderr: %q", errOut)
	}
	// self-speculation, traced: a prefill step, then one step per round
	tr := filepath.Join(t.TempDir(), "trace.jsonl")
	self, _, code3 := run(t, "generate", "--model", target, "--draft", "self:2", "--prompt", "The capital of France is", "-n", "24", "--temperature", "0", "--ids", "-t", "1", "--trace", tr)
	if code3 != 0 || self != plain {
		t.Errorf("self:2 draft: %q (exit %d), want %q", self, code3, plain)
	}
	f, err := os.Open(tr)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	steps, err := trace.ReadJSONL(f)
	if err != nil || len(steps) < 2 || steps[0].Kind != "prefill" {
		t.Fatalf("trace of a speculative run: %d steps, %v", len(steps), err)
	}
	for _, st := range steps[1:] {
		if st.Kind != "speculative" || st.Speculative == nil || st.N != len(st.Speculative.Proposed)+1 {
			t.Errorf("step %d: kind %s, %d positions for %+v", st.Index, st.Kind, st.N, st.Speculative)
		}
	}
	if _, e, c := run(t, "generate", "--model", target, "--draft", "self:4", "--prompt", "x", "-n", "2"); c != 1 || !strings.Contains(e, "choose 1 to 3") {
		t.Errorf("a self draft of every layer: exit %d, %q", c, e)
	}
	if _, e, c := run(t, "generate", "--model", target, "--draft", stories(t), "--prompt", "x", "-n", "2"); c != 1 || !strings.Contains(e, "tokenizer") || strings.Count(e, "\n") > 2 {
		t.Errorf("a draft with another vocabulary: exit %d, %q", c, e)
	}
	if _, e, c := run(t, "generate", "--model", target, "--draft", draft, "--draft-k", "0", "--prompt", "x"); c != 2 || !strings.Contains(e, "draft-k") {
		t.Errorf("--draft-k 0: exit %d, %q", c, e)
	}
	out, e, c := run(t, "bench", "--model", target, "--draft", draft, "-p", "8", "-n", "16", "-r", "1", "-t", "1", "--json")
	var b SpecBench
	if c != 0 || json.Unmarshal([]byte(out), &b) != nil || b.PlainTPS <= 0 || b.SpecTPS <= 0 || b.Acceptance <= 0 || b.VerifyMS <= 0 || b.K != 4 {
		t.Errorf("bench --draft: exit %d, %q %q", c, out, e)
	}
}

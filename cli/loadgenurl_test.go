package cli

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"stepthrough/models"
	"stepthrough/server"
)

// loadgen --url drives an OpenAI-compatible server over HTTP (here
// Stepthrough's own, in process): every user's streamed reply is counted,
// each count runs in turn, and the gain over one user is reported.
func TestLoadgenURL(t *testing.T) {
	s, err := server.New(server.Config{Embedded: map[string][]byte{"lesson.gguf": models.Lesson}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	out, errOut, code := run(t, "loadgen", "--url", ts.URL+"/v1", "--model", "lesson.gguf", "--users", "1,3", "--max-tokens", "6", "--prompt-words", "10", "--json")
	if code != 0 {
		t.Fatalf("loadgen --url: %s", errOut)
	}
	var runs []URLRun
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs, want 2 (1 and 3 users)", len(runs))
	}
	for _, r := range runs {
		if r.Errors != 0 || r.Generated != 6*r.Users || r.PromptTokens < 10*r.Users || r.TTFT.P50 <= 0 || r.TokensPerSecond <= 0 {
			t.Errorf("run %+v", r)
		}
	}
	out, _, code = run(t, "loadgen", "--url", ts.URL+"/v1", "--model", "lesson.gguf", "--users", "1,2", "--max-tokens", "3")
	if code != 0 || !strings.Contains(out, "| gain over 1 user |") || !strings.Contains(out, "1.00×") {
		t.Errorf("loadgen --url table:\n%s", out)
	}
	for _, bad := range [][]string{
		{"--url", "ftp://x/v1", "--model", "m"},
		{"--url", ts.URL + "/v1", "--model", "m", "--users", "1,zero"},
		{"--url", ts.URL + "/v1", "--model", "no-such-model.gguf", "--users", "1"},
		{"--model", "m.gguf", "--users", "1,8"},
	} {
		if _, errOut, code := run(t, append([]string{"loadgen"}, bad...)...); code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") > 2 {
			t.Errorf("loadgen %v: code %d, %q", bad, code, errOut)
		}
	}
}

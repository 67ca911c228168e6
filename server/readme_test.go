package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The README's API examples run against a real server: each curl command
// (the block after <!-- api-examples -->) prints what its "# expect:"
// line says. Without curl the test skips, or fails under REQUIRE_BROWSER=1
// (CI installs curl beside chromium).
func TestREADMEAPIExamples(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("REQUIRE_BROWSER") == "1" {
			t.Fatal("REQUIRE_BROWSER=1: curl is not installed")
		}
		t.Skip("curl is not installed")
	}
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(b), "<!-- api-examples -->\n```sh\n")
	if !ok {
		t.Fatal("README.md has no api-examples block")
	}
	block, _, _ = strings.Cut(block, "```")
	block = strings.ReplaceAll(block, "\\\n", "")
	_, base := apiServer(t, Config{})
	var cmd string
	n := 0
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "curl "):
			cmd = strings.ReplaceAll(line, "http://127.0.0.1:8080", base)
		case strings.HasPrefix(line, "# expect: "):
			want := strings.TrimPrefix(line, "# expect: ")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			out, err := exec.CommandContext(ctx, "bash", "-c", cmd).CombinedOutput()
			cancel()
			if err != nil || !strings.Contains(string(out), want) || strings.Contains(string(out), `"error"`) {
				t.Errorf("%s\nprinted %.600s (%v)\nwant %s", cmd, out, err, want)
			}
			n++
		}
	}
	if n < 5 {
		t.Errorf("only %d examples checked", n)
	}
}

package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The official openai npm client (clients/node, pinned; the README's test
// command installs it) passes its checks against the server. Without node
// or the installed client the test skips, or fails under
// REQUIRE_BROWSER=1 (the browser toolchain: chromium and Node).
func TestOpenAINodeClient(t *testing.T) {
	dir := filepath.Join("..", "clients", "node")
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil {
		missing = "the openai npm client is not installed: npm ci --prefix clients/node"
	}
	if missing != "" {
		if os.Getenv("REQUIRE_BROWSER") == "1" {
			t.Fatalf("REQUIRE_BROWSER=1: %s", missing)
		}
		t.Skip(missing)
	}
	_, base := apiServer(t, Config{API: APIConfig{Key: "sk-node"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "check.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BASE_URL="+base+"/v1", "API_KEY=sk-node")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the openai npm client's checks failed: %v", err)
	}
}

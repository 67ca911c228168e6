package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/hfhub"
	"stepthrough/hfhub/hubtest"
	"stepthrough/server"
)

// hfEnv points the Hub's variables at a fake Hub and a fresh cache.
func hfEnv(t *testing.T, endpoint string) (cache string) {
	cache = t.TempDir()
	t.Setenv("HF_ENDPOINT", endpoint)
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HOME", t.TempDir()) // no token file
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	return cache
}

// stepthrough pull against a fake Hub: the model lands in the cache
// HF_HUB_CACHE names, a second pull finds it there, refusals are one
// line with their exit status; and serve offers it by ORG/REPO:QUANT,
// answering an API completion with it.
func TestPullAndServe(t *testing.T) {
	w, err := model.Synthesize(model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 2, FFN: 64, Vocab: 700, Context: 64, Type: quant.Q8_0})
	if err != nil {
		t.Fatal(err)
	}
	hub := hubtest.New(t)
	commit := hub.Add("org/tiny-GGUF", map[string][]byte{"tiny-Q8_0.gguf": w.Bytes(), "README.md": []byte("# tiny")})
	cache := hfEnv(t, hub.URL())
	path := filepath.Join(cache, "models--org--tiny-GGUF", "snapshots", commit, "tiny-Q8_0.gguf")

	out, errOut, code := run(t, "pull", "org/tiny-GGUF")
	want := "org/tiny-GGUF: fetched tiny-Q8_0.gguf (" + hfhub.Size(int64(len(w.Bytes()))) + ", Q8_0, the default)\npath:  " + path + "\nserve offers it as org/tiny-GGUF:Q8_0\n"
	if code != 0 || out != want {
		t.Fatalf("pull: exit %d, stdout %q (want %q), stderr %q", code, out, want, errOut)
	}
	out, _, code = run(t, "pull", "hf.co/org/tiny-GGUF:q8_0")
	if code != 0 || !strings.Contains(out, "tiny-Q8_0.gguf ("+hfhub.Size(int64(len(w.Bytes())))+", tagged Q8_0 as asked) is in the cache") {
		t.Errorf("a second pull: exit %d, %q", code, out)
	}
	out, _, code = run(t, "pull", "org/tiny-GGUF", "--file", "tiny-Q8_0.gguf") // a flag after the repository
	if code != 0 || !strings.Contains(out, "named with --file") {
		t.Errorf("pull --file after the repository: exit %d, %q", code, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "name one repository"},
		{[]string{"gpt2"}, 2, "a repository is written ORG/REPO"},
		{[]string{"org/tiny-GGUF:Q8_0", "--file", "x.gguf"}, 2, "not both"},
		{[]string{"org/tiny-GGUF:Q4_K_M"}, 1, "no Q4_K_M file here (it has Q8_0 ("},
		{[]string{"org/missing"}, 1, "no repository org/missing on " + hub.URL() + " (or it is private: set HF_TOKEN)"},
	} {
		_, errOut, code := run(t, append([]string{"pull"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("pull %v: exit %d, %q; want exit %d and %q in one line", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	t.Setenv("HF_HUB_OFFLINE", "1")
	hub.Requests()
	if out, _, code := run(t, "pull", "org/tiny-GGUF"); code != 0 || !strings.Contains(out, "is in the cache") || len(hub.Requests()) != 0 {
		t.Errorf("offline: exit %d, %q", code, out)
	}

	models, dir, err := hfCacheModels()
	if err != nil || dir != cache || models["org/tiny-GGUF:Q8_0"] != path || len(models) != 1 {
		t.Fatalf("hfCacheModels() = %v, %q, %v", models, dir, err)
	}
	s, err := server.New(server.Config{ModelFiles: models})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	if ids := apiGet(t, ts.URL+"/v1/models"); !strings.Contains(ids, `"id":"org/tiny-GGUF:Q8_0"`) {
		t.Errorf("/v1/models does not list the pulled model: %s", ids)
	}
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"org/tiny-GGUF:Q8_0","prompt":"the cat","max_tokens":3,"temperature":0}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Model   string `json:"model"`
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != http.StatusOK || c.Model != "org/tiny-GGUF:Q8_0" || len(c.Choices) != 1 || c.Usage.CompletionTokens == 0 {
		t.Errorf("a completion with the pulled model: %d %+v %v", resp.StatusCode, c, err)
	}
}

// serve's -h names the switch, and STEPTHROUGH_HF_CACHE=0 turns it off.
func TestServeHFCacheSwitch(t *testing.T) {
	t.Setenv("STEPTHROUGH_HF_CACHE", "0")
	out, _, _ := run(t, "serve", "-h")
	if !strings.Contains(out, "-hf-cache") || strings.Contains(out, "(default true)") {
		t.Errorf("serve -h with STEPTHROUGH_HF_CACHE=0:\n%s", out)
	}
}

func apiGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// The progress line: bytes, share, rate and time left, on one line.
func TestProgressText(t *testing.T) {
	for _, tc := range []struct {
		fetched, done, total int64
		elapsed              time.Duration
		want                 string
	}{
		{0, 0, 4 << 30, 0, "0 B / 4.0 GiB    0%\x1b[K"},
		{1 << 30, 1 << 30, 4 << 30, 8 * time.Second, "1.0 GiB / 4.0 GiB   25%  128.0 MiB/s  ETA 24s\x1b[K"},
		{1 << 30, 3 << 30, 4 << 30, 8 * time.Second, "3.0 GiB / 4.0 GiB   75%  128.0 MiB/s  ETA 8s\x1b[K"}, // continued: the rate counts this pull's bytes
	} {
		if got := progressText(tc.fetched, tc.done, tc.total, tc.elapsed); got != tc.want {
			t.Errorf("progressText(%d, %d, %d, %s) = %q, want %q", tc.fetched, tc.done, tc.total, tc.elapsed, got, tc.want)
		}
	}
	// the line is redrawn from its own goroutine and ended with the last count
	var b strings.Builder
	p := &progressLine{w: &b}
	p.update(100, 1000)
	p.update(1000, 1000)
	p.end()
	if out := b.String(); !strings.HasPrefix(out, "\r") || !strings.HasSuffix(out, "\r1000 B / 1000 B  100%\x1b[K\n") {
		t.Errorf("the progress line wrote %q", out)
	}
	b.Reset()
	(&progressLine{w: &b}).end()
	if b.Len() != 0 {
		t.Errorf("a pull that fetched nothing drew %q", b.String())
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(null) || isTerminal(io.Discard) {
		t.Errorf("/dev/null or a plain writer taken for a terminal: the progress line would be drawn there")
	}
}

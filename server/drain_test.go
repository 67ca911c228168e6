package server

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A shutdown drains: an API stream in flight when it begins runs to its
// end ([DONE], every token), and then the server takes no new request.
func TestShutdownDrainsAPIStreams(t *testing.T) {
	s := mustNew(t, Config{Addr: "127.0.0.1:0", Embedded: lessonModels()})
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, func(a string) { addr <- a }) }()
	base := "http://" + <-addr
	body := `{"model": "lesson.gguf", "prompt": "Once upon a time", "max_tokens": 300, "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}}`
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() { // the first chunk: generating
		t.Fatal("no first chunk")
	}
	cancel() // SIGTERM
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	tail := strings.Join(lines[max(0, len(lines)-4):], "\n")
	if !strings.Contains(tail, "data: [DONE]") || !strings.Contains(tail, `"completion_tokens":300`) {
		t.Errorf("the stream in flight did not finish: ends %q", tail)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	if r, err := http.Get(base + "/healthz"); err == nil {
		r.Body.Close()
		t.Errorf("a request after the drain was answered: %s", r.Status)
	}
}

// Every response names its request: a proxy's X-Request-ID when it is a
// short token, else a fresh one; a malformed one is replaced.
func TestRequestIDs(t *testing.T) {
	s := mustNew(t, Config{Embedded: lessonModels()})
	h := s.Handler()
	for _, tc := range []struct {
		sent string
		kept bool
	}{{"proxy-42.a", true}, {"", false}, {"bad id\nwith newline", false}, {strings.Repeat("x", 65), false}} {
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		if tc.sent != "" {
			req.Header.Set("X-Request-ID", tc.sent)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		got := w.Header().Get("X-Request-ID")
		if tc.kept && got != tc.sent || !tc.kept && (got == "" || got == tc.sent) {
			t.Errorf("sent %q, answered %q", tc.sent, got)
		}
	}
}

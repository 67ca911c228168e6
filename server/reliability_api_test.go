package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The reliability suite, second pass: the holes the API's tools, the
// in-memory conversions and the serving and request pages opened, each
// against a real server on loopback (newAbuseServer). Figures go to the
// test log.

// apiPost sends a JSON body to an API path from a forwarded address.
func (a abuseServer) apiPost(t *testing.T, path, body, from string, h map[string]string) (int, string, time.Duration) {
	t.Helper()
	req, _ := http.NewRequest("POST", a.ts.URL+path, strings.NewReader(body))
	req.Header = as(from)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), time.Since(start)
}

const greedyChat = `{"messages": [{"role": "user", "content": "What is the capital of France?"}], "temperature": 0, "max_tokens": 4}`

// toolChat is a chat request offering one tool whose parameters are schema.
func toolChat(schema string) string {
	return `{"messages": [{"role": "user", "content": "x"}], "max_tokens": 1, "tools": [{"type": "function", "function": {"name": "f", "parameters": ` + schema + `}}]}`
}

// Finding 1: a "$ref" to a file made the server open it; the answer told
// whether it existed and what it held, and file:///dev/stdin held a slot
// for good. Now no reference outside the schema is followed: an existing
// and a missing file get the same answer, and the slots stay free.
func TestReliabilitySchemaFileReference(t *testing.T) {
	a := newAbuseServer(t, Config{})
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.json")
	os.WriteFile(secret, []byte(`{"password": "hunter2"}`), 0o600)
	ref := func(u string) string {
		return toolChat(`{"type": "object", "properties": {"a": {"$ref": "` + u + `"}}}`)
	}
	st1, b1, _ := a.apiPost(t, "/v1/chat/completions", ref("file://"+secret), "203.0.113.1", nil)
	st2, b2, _ := a.apiPost(t, "/v1/chat/completions", ref("file://"+filepath.Join(dir, "nope.json")), "203.0.113.1", nil)
	if st1 != 400 || st2 != 400 {
		t.Fatalf("statuses %d %d, want 400: %s %s", st1, st2, b1, b2)
	}
	if strings.ReplaceAll(b1, "secret.json", "F") != strings.ReplaceAll(b2, "nope.json", "F") {
		t.Errorf("an existing file and a missing one answer differently:\n%s\n%s", b1, b2)
	}
	if strings.Contains(b1, "password") || strings.Contains(b1, "hunter2") {
		t.Errorf("the answer shows the file: %s", b1)
	}
	var wg sync.WaitGroup
	for range 8 { // twice the slots
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st, b, _ := a.apiPost(t, "/v1/chat/completions", ref("file:///dev/stdin"), "203.0.113.2", nil); st != 400 {
				t.Errorf("stdin reference: %d %s", st, b)
			}
		}()
	}
	wg.Wait()
	st, b, d := a.apiPost(t, "/v1/chat/completions", greedyChat, "192.0.2.1", nil)
	if st != 200 {
		t.Errorf("after the stdin references, a client got %d: %s", st, b)
	}
	t.Logf("file references: 400 with one answer for existing and missing files (%s); after 8 stdin references a client was answered 200 in %v", b1, d)
}

// nestedSchema is a tool schema nested n objects deep.
func nestedSchema(n int) string {
	return strings.Repeat(`{"type": "object", "properties": {"a": `, n) + `{"type": "string"}` + strings.Repeat(`}}`, n)
}

// Finding 2: a 55 KB schema nested a thousand deep cost about 10 s of
// CPU and a GiB, four of them locked the API. Now depth, size and values
// are bounded before compiling: each is refused at once, and other
// callers are answered meanwhile.
func TestReliabilityDeepSchema(t *testing.T) {
	a := newAbuseServer(t, Config{})
	deep := toolChat(nestedSchema(700)) // 28 KB, within the size bound
	rss0 := rssMiB(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest time.Duration
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				st, b, d := a.apiPost(t, "/v1/chat/completions", deep, "203.0.113.3", nil)
				if st != 400 || !strings.Contains(b, "nested more than") {
					t.Errorf("a deep schema: %d %s", st, b)
				}
				mu.Lock()
				slowest = max(slowest, d)
				mu.Unlock()
			}
		}()
	}
	st, b, d := a.apiPost(t, "/v1/chat/completions", greedyChat, "192.0.2.1", nil)
	wg.Wait()
	if st != 200 {
		t.Errorf("during the deep schemas a client got %d: %s", st, b)
	}
	t.Logf("20 requests with a %d-byte schema nested 700 deep: each refused, the slowest in %v; a client meanwhile answered in %v; RSS %.0f → %.0f MiB",
		len(deep), slowest, d, rss0, rssMiB(t))
}

// Finding 3: NAME@TYPE conversions were cached by the raw string, so
// "@ f16", "@%09f16", … were each a new conversion held for good. Now
// names are parsed first and conversions live in one LRU under a budget.
func TestReliabilityConversionVariants(t *testing.T) {
	a := newAbuseServer(t, Config{})
	runtime.GC()
	rss0 := rssMiB(t)
	spellings := []string{"f16", " f16", "\tf16", "F16 ", "f16\n", " F16\t", "q8_0", "Q8_0", " q8_0 "}
	for _, sp := range spellings {
		if st, _ := a.get(t, "/memory?source="+url.QueryEscape("lesson.gguf@"+sp), "203.0.113.4"); st != 200 {
			t.Errorf("/memory for lesson.gguf@%q: %d", sp, st)
		}
		body := `{"model": "lesson.gguf@` + strings.NewReplacer("\t", `\t`, "\n", `\n`).Replace(sp) + `", "prompt": "The capital of France is", "max_tokens": 1}`
		if st, b, _ := a.apiPost(t, "/v1/completions", body, "203.0.113.4", nil); st != 200 {
			t.Errorf("the API for lesson.gguf@%q: %d %s", sp, st, b)
		}
	}
	names, bytes := a.s.reg.Conversions()
	if len(names) != 2 {
		t.Errorf("%d spellings of two conversions left %d conversions: %v", len(spellings), len(names), names)
	}
	peak := rssMiB(t)
	a.s.reg.SetConversionBudget(1) // the budget below any model: one conversion at a time
	for _, ty := range []string{"q4_0", "q5_0", "q6_k", "q4_k_m", "bf16"} {
		if st, _ := a.get(t, "/memory?source=lesson.gguf@"+ty, "203.0.113.4"); st != 200 {
			t.Errorf("/memory for lesson.gguf@%s: %d", ty, st)
		}
	}
	after, _ := a.s.reg.Conversions()
	if len(after) != 1 || after[0] != "lesson.gguf@BF16" {
		t.Errorf("under a budget of 1 byte the registry holds %v, want the last conversion alone", after)
	}
	runtime.GC()
	t.Logf("%d spellings → conversions %v (%d KiB); under a tiny budget, 5 more types → %v; RSS %.0f → %.0f → %.0f MiB",
		len(spellings), names, bytes>>10, after, rss0, peak, rssMiB(t))
}

// Finding 4: a slot was taken before the body was read, so four clients
// trickling bodies locked the API for the read timeout. Now the body is
// read first, within BodyWait, and the slot is taken after.
func TestReliabilitySlowBodies(t *testing.T) {
	a := newAbuseServer(t, Config{API: APIConfig{BodyWait: 2 * time.Second}})
	host := strings.TrimPrefix(a.ts.URL, "http://")
	var conns []net.Conn
	for range 8 { // twice the slots
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", host)
		conns = append(conns, c)
	}
	time.Sleep(100 * time.Millisecond)
	st, b, d := a.apiPost(t, "/v1/chat/completions", greedyChat, "192.0.2.1", nil)
	if st != 200 {
		t.Errorf("with 8 bodies trickling, a client got %d: %s", st, b)
	}
	start := time.Now()
	var statuses []string
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil && line == "" {
			line = err.Error()
		}
		statuses = append(statuses, strings.TrimSpace(line))
	}
	for _, s := range statuses {
		if !strings.Contains(s, "408") {
			t.Errorf("a trickled body was answered %q, want 408", s)
		}
	}
	t.Logf("8 trickled bodies: a client answered %d in %v meanwhile; the trickles were answered %q within %v", st, d, statuses[0], time.Since(start)+100*time.Millisecond)
}

// Finding 8, first item: without a key, another website's page could POST
// text/plain to /v1. Now a body must be declared JSON and an Origin must
// be this host's.
func TestReliabilityAPIFromOtherSites(t *testing.T) {
	a := newAbuseServer(t, Config{})
	host := strings.TrimPrefix(a.ts.URL, "http://")
	cases := []struct {
		name string
		h    map[string]string
		want int
	}{
		{"text/plain", map[string]string{"Content-Type": "text/plain"}, 415},
		{"a form", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415},
		{"no type", map[string]string{"Content-Type": ""}, 415},
		{"another site", map[string]string{"Origin": "https://evil.example"}, 403},
		{"this site", map[string]string{"Origin": "http://" + host}, 200},
		{"JSON with a charset", map[string]string{"Content-Type": "application/json; charset=utf-8"}, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if st, b, _ := a.apiPost(t, "/v1/chat/completions", greedyChat, "203.0.113.5", c.h); st != c.want {
				t.Errorf("%d, want %d: %s", st, c.want, b)
			}
		})
	}
}

// Finding 8, the key: /requests links carried the key in the URL, and
// /agent ran API requests with no key. Now both pages ask for the key in
// a form, once, and keep a signed cookie; a key in the URL opens nothing.
func TestReliabilityAPIKeyPages(t *testing.T) {
	const key = "sk-test-key-0123456789"
	a := newAbuseServer(t, Config{API: APIConfig{Key: key}})
	if st, b, _ := a.apiPost(t, "/v1/chat/completions", greedyChat, "192.0.2.1", map[string]string{"Authorization": "Bearer " + key}); st != 200 {
		t.Fatalf("an API request with the key: %d %s", st, b)
	}
	get := func(path string, cookie *http.Cookie) (int, string) {
		req, _ := http.NewRequest("GET", a.ts.URL+path, nil)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, p := range []string{"/requests", "/requests?key=" + key, "/agent", "/agent?key=" + key} {
		if st, b := get(p, nil); st != 401 || !strings.Contains(b, `data-testid="key-form"`) || strings.Contains(b, key) {
			t.Errorf("%s without the cookie: %d, want 401 with the key form and no key in the page", p, st)
		}
	}
	post := func(k string) *http.Response {
		resp, err := noRedirect.PostForm(a.ts.URL+"/api-key", url.Values{"key": {k}, "next": {"/requests"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("wrong"); resp.StatusCode != 401 || len(resp.Cookies()) != 0 {
		t.Errorf("a wrong key: %d with cookies %v", resp.StatusCode, resp.Cookies())
	}
	resp := post(key)
	if resp.StatusCode != 303 || len(resp.Cookies()) != 1 {
		t.Fatalf("the right key: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	ck := resp.Cookies()[0]
	if strings.Contains(ck.Value, key) || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Errorf("the cookie %+v holds the key or is not HttpOnly and SameSite=Strict", ck)
	}
	st, b := get("/requests", ck)
	if st != 200 || !strings.Contains(b, `data-testid="request"`) || strings.Contains(b, "key=") {
		t.Errorf("/requests with the cookie: %d; its links must carry no key", st)
	}
	if st, _ := get("/agent?q="+url.QueryEscape("What is 2 + 3?"), ck); st != 200 {
		t.Errorf("/agent with the cookie: %d", st)
	}
	if resp, _ := noRedirect.PostForm(a.ts.URL+"/api-key", url.Values{"key": {key}, "next": {"//evil.example/"}}); resp.Header.Get("Location") != "/requests" {
		t.Errorf("the form sent a browser to %q", resp.Header.Get("Location"))
	}
}

// Finding 7, second item: 32 full transcripts were kept, up to ~740 MiB.
// Now each is cut and the list holds at most KeepBytes.
func TestReliabilityTranscriptsBounded(t *testing.T) {
	a := newAbuseServer(t, Config{API: APIConfig{KeepBytes: 1 << 20}})
	big := `{"messages": [{"role": "user", "content": "Tell me a story."}], "temperature": 1.5, "n": 8, "max_tokens": 200, "logprobs": true, "top_logprobs": 20, "stream": true}`
	for range 6 {
		if st, b, _ := a.apiPost(t, "/v1/chat/completions", big, "203.0.113.6", nil); st != 200 {
			t.Fatalf("%d %s", st, b)
		}
	}
	n, held := a.s.watched.held()
	if held > 1<<20 {
		t.Errorf("the watch list holds %d bytes, budget %d", held, 1<<20)
	}
	longest := 0
	for _, w := range a.s.watched.list() {
		longest = max(longest, len(w.Response))
	}
	if longest > maxWatchedResponse+100 {
		t.Errorf("a kept transcript is %d bytes", longest)
	}
	t.Logf("6 streamed requests (n=8, 200 tokens, 20 top logprobs): %d kept, %d KiB in all, the longest transcript %d KiB", n, held>>10, longest>>10)
}

// Finding 9: a tab that stops reading stayed connected while its backlog
// fit in the socket buffers. Now pings go unanswered behind the backlog
// and the connection is dropped within PongWait.
func TestReliabilityTabThatStopsReading(t *testing.T) {
	const wait = time.Second
	a := newAbuseServer(t, Config{PongWait: wait})
	c := a.ws(t, "/ws?sid=nope", as("203.0.113.7"))
	start := time.Now()
	time.Sleep(3 * wait) // never read: pings pile up unanswered
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var err error
	for err == nil {
		_, _, err = c.ReadMessage()
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the connection was still open after %v: %v", time.Since(start), err)
	}
	t.Logf("a client that stopped reading was dropped (PongWait %v): %v", wait, err)
	healthy := a.ws(t, "/ws?sid=nope2", as("203.0.113.8"))
	healthy.SetReadDeadline(time.Now().Add(4 * wait))
	if _, _, err := healthy.ReadMessage(); err != nil && !strings.Contains(err.Error(), "timeout") {
		t.Errorf("a client that reads (and so answers pings) was dropped: %v", err)
	}
}

// Finding 5, the Explorer: 200 page loads from ten addresses filled the
// session pool and new visitors got 503 for 40–60 s. Now a full pool
// takes a detached session of the heaviest address for a newcomer.
func TestReliabilityFewAddressesFillThePool(t *testing.T) {
	a := newAbuseServer(t, Config{})
	for i := range 200 {
		from := fmt.Sprintf("198.51.100.%d", i%10)
		if st, _ := a.get(t, "/", from); st != 200 {
			t.Fatalf("load %d from %s: %d", i, from, st)
		}
	}
	if n := a.s.sessions.Len(); n < 200 {
		t.Fatalf("the pool holds %d sessions after 200 loads; the test means to fill it", n)
	}
	start := time.Now()
	var st int
	for time.Since(start) < 15*time.Second {
		if st, _ = a.get(t, "/", "192.0.2.50"); st == 200 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if st != 200 {
		t.Fatalf("a new visitor still got %d after %v", st, time.Since(start))
	}
	t.Logf("after 200 page loads from 10 addresses (the pool full), a new visitor was served after %v", time.Since(start).Round(10*time.Millisecond))
	if d := time.Since(start); d > time.Second {
		t.Errorf("a new visitor waited %v", d)
	}
}

// Finding 8, event streams: clients that never read /serving's events
// stayed connected for good, with no cap. Now streams are capped per
// address (and in all), and each write must go out within a deadline.
func TestReliabilityEventStreamCaps(t *testing.T) {
	a := newAbuseServer(t, Config{})
	form := servingForm(64, 32, 48, 64, 4, "continuous", "paged", "on", "")
	form.Set("ignore_eos", "on")
	path, code, msg := postServing(t, a.ts, form, a.ts.URL)
	if code != http.StatusSeeOther {
		t.Fatalf("start a load: %d %s", code, msg)
	}
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	statuses := map[int]int{}
	for range maxStreamsPerClient + 2 {
		req, _ := http.NewRequest("GET", a.ts.URL+path+"/events", nil)
		req.Header = as("203.0.113.9")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		statuses[resp.StatusCode]++
		open = append(open, resp)
	}
	if statuses[200] != maxStreamsPerClient || statuses[429] != 2 {
		t.Errorf("%d streams from one address: statuses %v, want %d × 200 and 2 × 429", maxStreamsPerClient+2, statuses, maxStreamsPerClient)
	}
	req, _ := http.NewRequest("GET", a.ts.URL+path+"/events", nil)
	req.Header = as("192.0.2.1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("another address's stream: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	t.Logf("event streams from one address during a run: %v", statuses)
}

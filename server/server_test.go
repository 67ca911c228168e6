package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/gorilla/websocket"

	"stepthrough/engine/reftest"
	"stepthrough/models"
	"stepthrough/spec"
	"stepthrough/wsconn"
)

// mustNew builds a server and closes its rooms when the test ends.
func mustNew(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func testServer(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	dir := filepath.Dir(reftest.Path(t, "models", "stories260K.gguf"))
	s := mustNew(t, Config{ModelsDirs: []string{dir}, MaxPerClient: 5})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

func get(t *testing.T, u string) *goquery.Document { return getStatus(t, u, 200) }

// getStatus is get for a page that answers with status want (a page that
// explains an error answers 400 and still shows).
func getStatus(t *testing.T, u string, want int) *goquery.Document {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %s, want %d", u, resp.Status, want)
	}
	doc, err := goquery.NewDocumentFromReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestIndexOpensWithSettings(t *testing.T) {
	_, ts := testServer(t)
	doc := get(t, ts.URL+"/")
	opt := doc.Find(`select[name="model"] option`)
	if v, _ := opt.Attr("value"); opt.Length() != 1 || v != "stories260K.gguf" || doc.Find("[data-current-stage]").Length() != 0 {
		t.Errorf("empty page: models %q", opt.Text())
	}
	// the picker names the file's family, size, weight type and context, read from it
	if got, want := opt.Text(), "stories260K.gguf — llama · 292.8 K parameters · F32 · context 2048"; got != want {
		t.Errorf("model option %q, want %q", got, want)
	}
	q := url.Values{"prompt": {"Once upon a time"}, "temperature": {"0"}, "model": {"stories260K.gguf"}, "seed": {"5"}}
	doc = get(t, ts.URL+"/?"+q.Encode())
	strip := doc.Find("[data-current-stage]")
	if v, _ := strip.Attr("data-current-stage"); v != "tokenize" {
		t.Fatalf("current stage %q", v)
	}
	var ids []string
	doc.Find(`[data-testid="token"]`).Each(func(_ int, s *goquery.Selection) { v, _ := s.Attr("data-token-id"); ids = append(ids, v) })
	if strings.Join(ids, " ") != "1 403 407 261 378" {
		t.Errorf("tokens %v", ids)
	}
	if v, _ := doc.Find(`input[name="temperature"]`).Attr("value"); v != "0" {
		t.Errorf("temperature field %q", v)
	}
	// a shared URL with a later step and stage lands there
	q.Set("step", "2")
	q.Set("stage", "3")
	doc = get(t, ts.URL+"/?"+q.Encode())
	if v, _ := doc.Find("[data-current-stage]").Attr("data-current-stage"); v != "attention" {
		t.Errorf("step 2 stage 3: %q", v)
	}
	if n := doc.Find(`[data-testid="generated-token"]`).Length(); n != 2 {
		t.Errorf("%d generated tokens shown at step 2 before its draw, want 2", n)
	}
	// bad settings are explained, not a crash
	for bad, want := range map[string]string{"temperature=-1": "temperature", "top_p=2": "top-p", "model=nope.gguf": "no model named", "max_tokens=9999": "max tokens", "backend=gpu": "backend"} {
		doc = getStatus(t, ts.URL+"/?prompt=hi&"+bad, 400)
		if msg := doc.Find(`[data-testid="error"]`).Text(); !strings.Contains(msg, want) {
			t.Errorf("%s: error %q, want it to mention %q", bad, msg, want)
		}
	}
	// a link with one bad setting is refused naming it, and the form keeps
	// the settings that were fine and shows the bad one as typed, to fix
	doc = getStatus(t, ts.URL+"/?prompt=hi&max_tokens=8&top_k=5&ablate=L0H1", 400)
	for name, want := range map[string]string{"max_tokens": "8", "top_k": "5", "ablate": "L0H1"} {
		if v, _ := doc.Find(`input[name="` + name + `"]`).Attr("value"); v != want {
			t.Errorf("after a refused ablate: the form's %s is %q, want %q", name, v, want)
		}
	}
	if v := doc.Find(`textarea[name="prompt"]`).Text(); v != "hi" {
		t.Errorf("after a refused ablate: the prompt box holds %q", v)
	}
	doc = getStatus(t, ts.URL+"/?prompt=hi&max_tokens=8&top_p=2", 400)
	if v, _ := doc.Find(`input[name="top_p"]`).Attr("value"); v != "2" {
		t.Errorf("after a refused top-p: the form's top_p is %q, want the 2 typed", v)
	}
	if v, _ := doc.Find(`input[name="max_tokens"]`).Attr("value"); v != "8" {
		t.Errorf("after a refused top-p: the form's max_tokens is %q, want 8", v)
	}
	// a comparison the model cannot take is dropped at the run, saying so
	// where it is read before the stage
	doc = get(t, ts.URL+"/?prompt=hi&vs=Q9_9")
	if n := doc.Find(`[data-testid="notice"]`); !strings.Contains(n.Text(), "Q9_9") {
		t.Errorf("vs=Q9_9: the notice says %q", n.Text())
	}
	// a link typed by hand with a ";" in a value keeps it (Go's parser
	// would drop the pair, and the run would go without it, silently)
	doc = get(t, ts.URL+"/?prompt=a;b&temperature=0&ablate=L1H1;L2mlp")
	if v, _ := doc.Find(`input[name="ablate"]`).Attr("value"); v != "L1H1;L2mlp" {
		t.Errorf("ablate=L1H1;L2mlp by hand: the form holds %q", v)
	}
	if v := doc.Find(`textarea[name="prompt"]`).Text(); v != "a;b" {
		t.Errorf("prompt=a;b by hand: the form holds %q", v)
	}
	long := strings.Repeat("x", spec.MaxPromptChars+1)
	if msg := getStatus(t, ts.URL+"/?prompt="+long, 400).Find(`[data-testid="error"]`).Text(); !strings.Contains(msg, "limit") {
		t.Errorf("long prompt: %q", msg)
	}
	// the box counts characters, and so does the server: 700 Chinese
	// characters (2,100 bytes) fit the box and are not refused for length
	resp, err := http.Get(ts.URL + "/?max_tokens=1&prompt=" + url.QueryEscape(strings.Repeat("猫", 700)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "the limit is") {
		t.Errorf("700 characters (2,100 bytes) refused for length: %s", resp.Status)
	}
}

// The static files are served, gzip-compressed to a browser that takes
// it (the same bytes once inflated) and plain to one that does not.
func TestStaticAssets(t *testing.T) {
	_, ts := testServer(t)
	for _, p := range []string{"/static/app.css", "/static/app.js", "/healthz"} {
		plain := getEncoded(t, ts.URL+p, "")
		if !strings.HasPrefix(p, "/static/") {
			continue
		}
		zipped := getEncoded(t, ts.URL+p, "gzip")
		if len(zipped) >= len(plain)/2 {
			t.Errorf("GET %s with gzip: %d bytes, plain %d", p, len(zipped), len(plain))
		}
		zr, err := gzip.NewReader(bytes.NewReader(zipped))
		if err != nil {
			t.Fatalf("GET %s: not gzip: %v", p, err)
		}
		inflated, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(inflated, plain) {
			t.Errorf("GET %s: the gzip body inflates to %d bytes (%v), the plain one is %d", p, len(inflated), err, len(plain))
		}
	}
}

// getEncoded is a GET's body, asking for encoding ("" for none), as sent.
func getEncoded(t *testing.T, url, encoding string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", encoding)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %v %v", url, err, resp.Status)
	}
	defer resp.Body.Close()
	if got := resp.Header.Get("Content-Encoding"); got != encoding {
		t.Errorf("GET %s asking for %q: Content-Encoding %q", url, encoding, got)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func dial(t *testing.T, ts *httptest.Server, sid string, origin string) *websocket.Conn {
	t.Helper()
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http")+"/ws?sid="+sid, h)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func exchange(t *testing.T, c *websocket.Conn, msg string) *goquery.Document {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := goquery.NewDocumentFromReader(strings.NewReader(string(b)))
	return doc
}

func stage(doc *goquery.Document) string {
	v, _ := doc.Find("[data-current-stage]").Attr("data-current-stage")
	return v
}

// Over the WebSocket: run, step, back, next token; bad messages are shown
// as errors and leave the session as it was.
func TestWebSocketSession(t *testing.T) {
	s, ts := testServer(t)
	se, _ := s.sessions.New("test")
	c := dial(t, ts, se.ID(), ts.URL)
	doc := exchange(t, c, `{"action":"run","prompt":"Once upon a time","temperature":"0","model":"stories260K.gguf","seed":"1","HEADERS":{}}`)
	if stage(doc) != "tokenize" {
		t.Fatalf("after run: %q (%s)", stage(doc), doc.Find(".error").Text())
	}
	if stage(exchange(t, c, `{"action":"step"}`)) != "embed" {
		t.Error("step did not reach embed")
	}
	if stage(exchange(t, c, `{"action":"back"}`)) != "tokenize" {
		t.Error("back did not return to tokenize")
	}
	doc = exchange(t, c, `{"action":"next-token"}`)
	if stage(doc) != "embed" || doc.Find(`[data-testid="generated-token"]`).Length() != 1 { // the second is not drawn yet
		t.Errorf("next token: stage %q, %d generated", stage(doc), doc.Find(`[data-testid="generated-token"]`).Length())
	}
	if tm := strings.Join(strings.Fields(doc.Find(`[data-testid="timing"]`).Text()), " "); !regexp.MustCompile(`^prefill [0-9.]+ ms · TTFT [0-9.]+ ms · TPOT [0-9.]+ ms \(measured on this server\)$`).MatchString(tm) {
		t.Errorf("timing line %q", tm)
	}
	// a message the server refuses gets a note, not a re-render
	doc = exchange(t, c, `{"action":"explode"}`)
	if !strings.Contains(doc.Find(`[data-testid="note"]`).Text(), "unknown action") || doc.Find("#explorer").Length() != 0 {
		t.Errorf("bad action: %q", doc.Text())
	}
	doc = exchange(t, c, `{not json`)
	if !strings.Contains(doc.Find(`[data-testid="note"]`).Text(), "malformed message") {
		t.Errorf("malformed message: %q", doc.Text())
	}
	doc = exchange(t, c, `{"action":"run","prompt":"x","temperature":"NaN"}`)
	if !strings.Contains(doc.Find(`[data-testid="error"]`).Text(), "temperature") || doc.Find(`[data-testid="generated-token"]`).Length() != 1 {
		t.Errorf("invalid temperature must be explained and keep the session: %q", doc.Find(".error").Text())
	}
	doc = exchange(t, c, `{"action":"whatif-temperature","view_temperature":"9"}`)
	if !strings.Contains(doc.Find(`[data-testid="error"]`).Text(), "0.05 to 3") {
		t.Errorf("slider out of range: %q", doc.Find(".error").Text())
	}
	// an oversized message is refused
	big := `{"action":"run","prompt":"` + strings.Repeat("z", wsconn.DefaultMaxMessage) + `"}`
	c.WriteMessage(websocket.TextMessage, []byte(big))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, b, err := c.ReadMessage()
	if err != nil || !strings.Contains(string(b), "message too large: at most 16 KiB") {
		t.Errorf("oversized message: %q, %v; want the note", b, err)
	}
	if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Errorf("after an oversized message: %v, want close 1009", err)
	}
	// the session survives the connection: a new one resumes it
	c2 := dial(t, ts, se.ID(), "")
	if stage(exchange(t, c2, `{"action":"step"}`)) != "attention" {
		t.Error("reconnect did not resume the session")
	}
}

func TestWebSocketOriginAndLimits(t *testing.T) {
	s, ts := testServer(t)
	_, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http")+"/ws", http.Header{"Origin": {"http://evil.example"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin WebSocket: %v %v", err, resp)
	}
	for i := 0; i < 5; i++ {
		if _, err := s.sessions.New("1.2.3.4"); err != nil {
			t.Fatal(err)
		}
	}
	s.sessions.New("1.2.3.4")
	if n := s.sessions.Count("1.2.3.4"); n != 5 {
		t.Errorf("client holds %d sessions, limit 5", n)
	}
	s.evict(time.Now().Add(time.Hour)) // an hour from now, they are all idle
	if n := s.sessions.Len(); n != 0 {
		t.Errorf("%d sessions survive an hour idle", n)
	}
	if _, err := s.sessions.New("1.2.3.4"); err != nil {
		t.Errorf("idle sessions not evicted: %v", err)
	}
}

func TestRunGracefulShutdown(t *testing.T) {
	dir := filepath.Dir(reftest.Path(t, "models", "stories260K.gguf"))
	s := mustNew(t, Config{Addr: "127.0.0.1:0", ModelsDirs: []string{dir}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	addr := make(chan string, 1)
	go func() { done <- s.Run(ctx, func(a string) { addr <- a }) }()
	a := <-addr
	if resp, err := http.Get("http://" + a + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not shut down")
	}
}

// The Explorer on the Vulkan backend (lavapipe in CI; the CPU when there
// is no Vulkan) shows every stage: once a request here panicked the
// server (a phantom first step without an embedding).
func TestExplorerOnVulkan(t *testing.T) {
	_, ts := testServer(t)
	doc := get(t, ts.URL+"/?prompt=Once+upon+a+time&backend=vulkan&temperature=0&seed=1&model=stories260K.gguf")
	if msg := doc.Find(`[data-testid="error"]`).Text(); msg != "" || stage(doc) != "tokenize" {
		t.Fatalf("vulkan explorer: stage %q, error %q", stage(doc), msg)
	}
	sid, _ := doc.Find("body").Attr("ws-connect")
	c := dial(t, ts, strings.TrimPrefix(sid, "/ws?sid="), "")
	seen := map[string]bool{}
	for range 30 {
		d := exchange(t, c, `{"action":"step"}`)
		if msg := d.Find(`[data-testid="error"]`).Text(); msg != "" {
			t.Fatalf("stepping on vulkan: %q", msg)
		}
		seen[stage(d)] = true
		time.Sleep(40 * time.Millisecond) // within the 30 messages a second
	}
	for _, k := range []string{"embed", "attention", "mlp", "logits", "softmax", "sampler", "sample", "kv"} {
		if !seen[k] {
			t.Errorf("stepping on vulkan never showed %s", k)
		}
	}
}

// lessonModels are the models the app embeds: the lesson model, its
// draft (the speculative decoding lesson plays both) and the qwen3-family
// model (the Families lesson plays both families).
func lessonModels() map[string][]byte { return models.Embedded() }

// TestIndexKeepsThePromptAfterAnError: a run that cannot start shows why and
// leaves the viewer's prompt in the box to fix, whether the settings did not
// parse or the run did not open.
func TestIndexKeepsThePromptAfterAnError(t *testing.T) {
	_, ts := testServer(t)
	for _, tc := range []struct{ name, key, value string }{
		{"settings that do not parse", "temperature", "warm"},
		{"a model that is not there", "model", "nope.gguf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := url.Values{"prompt": {"A cat sat on the mat"}, "model": {"stories260K.gguf"}}
			q.Set(tc.key, tc.value)
			doc := getStatus(t, ts.URL+"/?"+q.Encode(), http.StatusBadRequest)
			if got := doc.Find("textarea#prompt").Text(); got != "A cat sat on the mat" {
				t.Errorf("prompt box holds %q after the error", got)
			}
			if doc.Find(`[data-testid="error"], [role="alert"]`).Length() == 0 {
				t.Error("no error shown")
			}
		})
	}
}

// The prompt boxes take the limit the server enforces, from spec:
// what the box lets a user type, the server accepts.
func TestPromptBoxesTakeTheServersLimit(t *testing.T) {
	_, ts := testServer(t)
	want := strconv.Itoa(spec.MaxPromptChars)
	for _, path := range []string{"/", "/compare"} {
		doc := getStatus(t, ts.URL+path, 200)
		if got, _ := doc.Find(`textarea[name="prompt"]`).Attr("maxlength"); got != want {
			t.Errorf("%s: the prompt box's maxlength %q, the server's limit %s", path, got, want)
		}
	}
}

package wsconn

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

func TestParse(t *testing.T) {
	actions := map[string]bool{"step": true, "view": true}
	for _, tt := range []struct {
		msg, want string
	}{
		{`not json`, "malformed"},
		{`[1,2]`, "malformed"},
		{`{"action":"explode"}`, "unknown action"},
		{`{"action":{"x":1}}`, "must be text"},
		{`{"action":"step","` + strings.Repeat("k", 65) + `":"v"}`, "field name too long"},
		{`{"action":"step","HEADERS":{"HX-Request":"true"}}`, ""},
		{`{"action":"view","layer":3}`, ""},
	} {
		m, err := Parse([]byte(tt.msg), actions)
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%.40s: error %v, want %q", tt.msg, err, tt.want)
		}
		if err == nil && tt.want == "" && strings.Contains(tt.msg, "layer") {
			if v, ok := m.Get("layer"); !ok || v != "3" {
				t.Errorf("layer = %q, %v", v, ok)
			}
		}
	}
}

// serve runs a test server whose connections call handle.
func serve(t *testing.T, opt Options, handle Handler) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Upgrade(w, r, opt)
		if err != nil {
			return
		}
		c.Serve(handle)
	}))
	t.Cleanup(ts.Close)
	return "ws" + strings.TrimPrefix(ts.URL, "http")
}

func dial(t *testing.T, u string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial(u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	return c
}

// A panic in a handler is recovered: the client gets a note and close
// 1011; the server goes on serving.
func TestPanicIsRecovered(t *testing.T) {
	u := serve(t, Options{}, func(ctx context.Context, msg []byte) {
		if string(msg) == "boom" {
			panic("boom")
		}
	})
	c := dial(t, u)
	c.WriteMessage(websocket.TextMessage, []byte("boom"))
	if _, m, err := c.ReadMessage(); err != nil || !strings.Contains(string(m), "failed") {
		t.Fatalf("after a panic: %q, %v; want a note", m, err)
	}
	if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseInternalServerErr) {
		t.Errorf("after a panic: %v, want close 1011", err)
	}
	c2 := dial(t, u)
	if err := c2.WriteMessage(websocket.TextMessage, []byte("fine")); err != nil {
		t.Error(err)
	}
}

// A flood gets one note per flood; the messages over the rate are not
// handled.
func TestRateLimit(t *testing.T) {
	handled := make(chan struct{}, 1000)
	u := serve(t, Options{Rate: 5}, func(ctx context.Context, msg []byte) { handled <- struct{}{} })
	c := dial(t, u)
	for range 50 {
		c.WriteMessage(websocket.TextMessage, []byte("x"))
	}
	if _, m, err := c.ReadMessage(); err != nil || string(m) != "too many messages: slow down" {
		t.Fatalf("flood: %q, %v", m, err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(handled); n > 6 {
		t.Errorf("%d of 50 flooded messages handled at 5 a second", n)
	}
}

// A client that sends but never reads is dropped when its queue fills,
// and both of the connection's goroutines end.
func TestSlowReaderIsDropped(t *testing.T) {
	before := runtime.NumGoroutine()
	big := make([]byte, 1<<20)
	ended := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Upgrade(w, r, Options{Queue: 4, WriteWait: 300 * time.Millisecond})
		if err != nil {
			return
		}
		go func() {
			for c.Context().Err() == nil {
				c.SendBytes(big)
				time.Sleep(time.Millisecond)
			}
		}()
		c.Serve(func(context.Context, []byte) {})
		close(ended)
	}))
	defer ts.Close()
	c := dial(t, "ws"+strings.TrimPrefix(ts.URL, "http"))
	_ = c // never reads
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("a client that never reads was not dropped")
	}
	time.Sleep(200 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before+4 {
		t.Errorf("goroutines %d → %d after the slow client was dropped", before, after)
	}
}

// Every text frame is valid UTF-8, however it is sent (a prepared message,
// bytes, a note): bytes that are not become U+FFFD; valid text passes
// unchanged.
func TestFramesAreUTF8(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"ascii", `<p data-answer=" Sa">`, `<p data-answer=" Sa">`},
		{"characters", "猫 🐱 é", "猫 🐱 é"},
		{"a lone continuation byte", `<tr data-answer="` + "\x8a" + `">`, `<tr data-answer="` + "\uFFFD" + `">`},
		{"a cut character", "\xe7\x8c", "\uFFFD"},
		{"a byte that is never UTF-8", "a\xffb", "a\uFFFDb"},
		{"empty", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sent := make(chan *Conn, 1)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c, err := Upgrade(w, r, Options{})
				if err != nil {
					return
				}
				sent <- c
				c.Serve(func(context.Context, []byte) {})
			}))
			t.Cleanup(ts.Close)
			c := dial(t, "ws"+strings.TrimPrefix(ts.URL, "http"))
			conn := <-sent
			conn.Send(Prepare([]byte(tt.in)))
			conn.SendBytes([]byte(tt.in))
			conn.Note(tt.in)
			for _, how := range []string{"Send", "SendBytes", "Note"} {
				_, m, err := c.ReadMessage()
				if err != nil {
					t.Fatalf("%s: %v", how, err)
				}
				if !utf8.Valid(m) || string(m) != tt.want {
					t.Errorf("%s sent %q: want %q", how, m, tt.want)
				}
			}
		})
	}
}

// Valid text is not copied: the common path costs one validation.
func TestValidUTF8KeepsValidText(t *testing.T) {
	b := []byte("already valid: 猫")
	if out := ValidUTF8(b); &out[0] != &b[0] {
		t.Error("valid text was copied")
	}
}

package server

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func lessonServer(t *testing.T, cfg Config) *httptest.Server {
	t.Helper()
	cfg.Embedded = lessonModels()
	s := mustNew(t, cfg)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func fetch(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func TestSecurityHeaders(t *testing.T) {
	ts := lessonServer(t, Config{})
	for _, p := range []string{"/", "/lessons", "/classroom", "/static/app.css"} {
		req, _ := http.NewRequest("GET", ts.URL+p, nil)
		resp, _ := fetch(t, req)
		h := resp.Header
		if !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
			h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: headers %v", p, h)
		}
	}
	for _, p := range []string{"/static/", "/static/vendor/", "/static/nope.js"} {
		req, _ := http.NewRequest("GET", ts.URL+p, nil)
		if resp, body := fetch(t, req); resp.StatusCode != 404 || strings.Contains(body, "<a href") {
			t.Errorf("GET %s: %s (a listing?)", p, resp.Status)
		}
	}
	// a body over the limit is refused before it is read
	req, _ := http.NewRequest("POST", ts.URL+"/rooms", strings.NewReader("lesson=seeds&pad="+strings.Repeat("x", 1<<20)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, _ := fetch(t, req); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 1 MiB POST: %s, want 413", resp.Status)
	}
}

// DNS rebinding: a server listening on loopback answers only to its own
// host names.
func TestAllowedHosts(t *testing.T) {
	ts := lessonServer(t, Config{Addr: "127.0.0.1:8080"})
	for host, want := range map[string]int{"evil.example": 421, "localhost:8080": 200, "127.0.0.1:9": 200} {
		req, _ := http.NewRequest("GET", ts.URL+"/healthz", nil)
		req.Host = host
		if resp, _ := fetch(t, req); resp.StatusCode != want {
			t.Errorf("Host %s: %s, want %d", host, resp.Status, want)
		}
	}
	ts = lessonServer(t, Config{Addr: "0.0.0.0:8080", AllowedHosts: []string{"class.example"}})
	for host, want := range map[string]int{"evil.example": 421, "class.example": 200} {
		req, _ := http.NewRequest("GET", ts.URL+"/healthz", nil)
		req.Host = host
		if resp, _ := fetch(t, req); resp.StatusCode != want {
			t.Errorf("--allowed-hosts: Host %s: %s, want %d", host, resp.Status, want)
		}
	}
}

// Per-address limits use the socket's address: a spoofed X-Forwarded-For
// buys nothing, unless the request comes through a trusted proxy.
func TestSpoofedForwardedFor(t *testing.T) {
	wrong := func(ts *httptest.Server, i int) int {
		req, _ := http.NewRequest("GET", ts.URL+"/join?code=ZZZZZ"+string("ABCDEFGHJKLMNPQRSTUVWXYZ23456789"[i%32]), nil)
		req.Header.Set("X-Forwarded-For", net.IPv4(10, 0, byte(i/250), byte(i%250+1)).String())
		resp, _ := fetch(t, req)
		return resp.StatusCode
	}
	ts := lessonServer(t, Config{})
	n429 := 0
	for i := range 30 {
		if wrong(ts, i) == 429 {
			n429++
		}
	}
	if n429 != 10 {
		t.Errorf("spoofed X-Forwarded-For: %d of 30 wrong codes refused with 429, want 10", n429)
	}
	_, loop, _ := net.ParseCIDR("127.0.0.0/8")
	ts = lessonServer(t, Config{TrustedProxies: []*net.IPNet{loop}})
	for i := range 30 {
		if st := wrong(ts, i); st != 404 {
			t.Fatalf("behind a trusted proxy, each forwarded address has its own limit: got %d", st)
		}
	}
}

// Join codes cannot be told apart from wrong instructor keys, and every
// route that takes a code counts the failures.
func TestCodesCannotBeEnumerated(t *testing.T) {
	ts := lessonServer(t, Config{})
	code, key := startRoom(t, ts.URL, url.Values{"lesson": {"seeds"}})
	answer := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		resp, body := fetch(t, req)
		return resp.StatusCode, body
	}
	for _, suffix := range []string{"/teach?key=" + strings.Repeat("0", 32), "/poll.csv?key=" + strings.Repeat("0", 32)} {
		s1, b1 := answer("/rooms/" + code + suffix)
		s2, b2 := answer("/rooms/ZZZZZZ" + suffix)
		if s1 != 404 || s1 != s2 || b1 != b2 {
			t.Errorf("%s: a real room answers %d, an unknown one %d (bodies equal: %v)", suffix, s1, s2, b1 == b2)
		}
	}
	for range 30 {
		answer("/rooms/ZZZZZZ/poll.csv?key=x")
	}
	if st, _ := answer("/rooms/" + code + "/teach?key=" + key); st != 429 {
		t.Errorf("after 30 failures even the right key is refused for a minute: %d, want 429", st)
	}
}

// Students are who their signed cookie says: an id in the address or a
// forged cookie is refused; the instructor's key leaves the address bar.
func TestForgedIdentities(t *testing.T) {
	ts := lessonServer(t, Config{})
	code, key := startRoom(t, ts.URL, url.Values{"lesson": {"seeds"}})
	wsURL := "ws" + strings.TrimPrefix(ts.URL, "http") + "/rooms/" + code + "/ws"
	for name, h := range map[string]http.Header{
		"an id in the query": nil,
		"a forged cookie":    {"Cookie": {"stepthrough_student=" + strings.Repeat("ab", 16) + "." + strings.Repeat("0", 32)}},
		"an unsigned id":     {"Cookie": {"stepthrough_student=" + strings.Repeat("ab", 16)}},
	} {
		u := wsURL
		if h == nil {
			u += "?student=" + strings.Repeat("ab", 16)
		}
		if _, resp, err := websocket.DefaultDialer.Dial(u, h); err == nil || resp == nil || resp.StatusCode != 403 {
			t.Errorf("%s: %v %v, want 403", name, err, resp)
		}
	}
	req, _ := http.NewRequest("GET", ts.URL+"/rooms/"+code+"/teach?key="+key, nil)
	resp, _ := fetch(t, req)
	var teach *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "stepthrough_teach" {
			teach = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/rooms/"+code+"/teach" || teach == nil ||
		!teach.HttpOnly || teach.Path != "/rooms/"+code || teach.SameSite != http.SameSiteStrictMode {
		t.Errorf("the instructor link: %s → %q, cookie %+v", resp.Status, resp.Header.Get("Location"), teach)
	}
}

// One comparison may not ask for unbounded work.
func TestCompareCostLimit(t *testing.T) {
	ts := lessonServer(t, Config{})
	q := url.Values{"prompt": {"Once"}, "n": {"256"}, "lane": {"beam=8", "beam=8", "beam=8", "beam=8", "beam=8", "beam=8"}}
	req, _ := http.NewRequest("GET", ts.URL+"/compare?"+q.Encode(), nil)
	start := time.Now()
	resp, body := fetch(t, req)
	if resp.StatusCode != 400 || !strings.Contains(body, "token passes") {
		t.Errorf("6 beams of 8 over 256 tokens: %s (%.200s)", resp.Status, body)
	}
	t.Logf("refused in %v", time.Since(start))
}

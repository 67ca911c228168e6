package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"stepthrough/classroom"
	"stepthrough/loadtest"
)

// The reliability suite: abusive clients against a real server on
// loopback, each from its own forwarded address (the server trusts
// loopback as its proxy here), while a well-behaved client from another
// address must keep getting answers. Figures go to the test log.

// rssMiB is the process's resident memory.
func rssMiB(t *testing.T) float64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status: RSS cannot be measured here")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kb) / 1024
		}
	}
	return 0
}

type abuseServer struct {
	s  *Server
	ts *httptest.Server
}

func newAbuseServer(t *testing.T, cfg Config) abuseServer {
	t.Helper()
	_, loop, _ := net.ParseCIDR("127.0.0.0/8")
	cfg.Embedded = lessonModels()
	cfg.TrustedProxies = []*net.IPNet{loop}
	s := mustNew(t, cfg)
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.Listener = smallSendBuffers{ts.Listener}
	ts.Start()
	t.Cleanup(ts.Close)
	return abuseServer{s, ts}
}

// smallSendBuffers gives every accepted connection a 16 KiB send buffer,
// so a client that stops reading is behind after a few kilobytes, as
// over a real network, not after the megabytes loopback would buffer.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// as makes requests from a forwarded address.
func as(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }

func (a abuseServer) get(t *testing.T, path string, from string) (int, time.Duration) {
	t.Helper()
	req, _ := http.NewRequest("GET", a.ts.URL+path, nil)
	req.Header = as(from)
	start := time.Now()
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

func (a abuseServer) ws(t *testing.T, path string, h http.Header) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(a.ts.URL, "http")+path, h)
	if err != nil {
		t.Fatalf("dial %s: %v %v", path, err, resp)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// settle waits for the goroutine count to come back near base.
func settle(t *testing.T, base int, what string) int {
	t.Helper()
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if n = runtime.NumGoroutine(); n <= base+10 {
			break
		}
	}
	if n > base+10 {
		t.Errorf("%s: %d goroutines remain (before: %d)", what, n, base)
	}
	return n
}

// wellBehaved checks a normal visitor is answered promptly while the
// abuse runs, and returns the latencies.
func (a abuseServer) wellBehaved(t *testing.T, stop <-chan struct{}) []time.Duration {
	var lat []time.Duration
	for i := 0; ; i++ {
		select {
		case <-stop:
			return lat
		default:
		}
		st, d := a.get(t, "/?prompt=Once+upon+a+time&max_tokens=4", "192.0.2.1")
		if st != 200 {
			t.Errorf("a well-behaved visitor got %d during the abuse", st)
		}
		lat = append(lat, d)
		time.Sleep(50 * time.Millisecond)
	}
}

func p95(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)*95/100]
}

// 300 Explorer connections from one address, each running a prompt:
// the address keeps at most its limit of live sessions (older ones
// expire and start no engine), memory stays bounded, and every goroutine
// ends when the connections close.
func TestAbuseManyExplorerConnections(t *testing.T) {
	a := newAbuseServer(t, Config{MaxPerClient: 20})
	base, rss0 := runtime.NumGoroutine(), rssMiB(t)
	stop := make(chan struct{})
	var lat []time.Duration
	done := make(chan struct{})
	go func() { lat = a.wellBehaved(t, stop); close(done) }()
	var conns []*websocket.Conn
	run, _ := json.Marshal(map[string]string{"action": "run", "prompt": strings.Repeat("Lily saw a big dog. ", 8), "max_tokens": "64"})
	for i := range 300 {
		c := a.ws(t, "/ws?sid=nope"+strconv.Itoa(i), as("198.51.100.7"))
		c.WriteMessage(websocket.TextMessage, run)
		conns = append(conns, c)
	}
	for _, c := range conns { // every connection is answered (a run, or "expired")
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, _, err := c.ReadMessage(); err != nil {
			t.Fatalf("a connection got no answer: %v", err)
		}
	}
	peak := rssMiB(t)
	close(stop)
	<-done
	if n := a.s.sessions.Count("198.51.100.7"); n > 20 {
		t.Errorf("one address holds %d sessions, limit 20", n)
	}
	for _, c := range conns {
		c.Close()
	}
	after := settle(t, base, "after 300 Explorer connections closed")
	t.Logf("300 Explorer connections: RSS %.0f → %.0f MiB (peak), goroutines %d → %d after closing, %d KiB reserved by live runs; a visitor's GET / p95 %v over %d requests",
		rss0, peak, base, after, a.s.sessions.Reserved()>>10, p95(lat), len(lat))
	if peak-rss0 > 400 {
		t.Errorf("RSS grew %.0f MiB under 300 Explorer connections", peak-rss0)
	}
}

// A room where every student branches: branches count against the same
// per-address limit as Explorer tabs, and they end with their connections.
func TestAbuseBranchStorm(t *testing.T) {
	a := newAbuseServer(t, Config{MaxPerClient: 10})
	req, _ := http.NewRequest("POST", a.ts.URL+"/rooms", strings.NewReader(url.Values{"lesson": {"tokens"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, body := fetch(t, req)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("start a room: %s %s", resp.Status, body)
	}
	code := strings.Split(resp.Header.Get("Location"), "/")[2]
	base, rss0 := runtime.NumGoroutine(), rssMiB(t)
	explore, _ := json.Marshal(map[string]string{"action": "explore"})
	var conns []*websocket.Conn
	for range 60 {
		h := as("198.51.100.9")
		h.Set("Cookie", newStudentFrom(t, a, code, "198.51.100.9"))
		c := a.ws(t, "/rooms/"+code+"/ws", h)
		c.WriteMessage(websocket.TextMessage, explore)
		conns = append(conns, c)
	}
	busy := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		for {
			_, m, err := c.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(m), "server is busy") {
				busy++
				break
			}
			if strings.Contains(string(m), `data-state="exploring"`) {
				break
			}
		}
	}
	if n := a.s.sessions.Count("198.51.100.9"); n > 10 || busy < 50 {
		t.Errorf("branch storm: %d branches live for one address (limit 10), %d told busy", n, busy)
	}
	peak := rssMiB(t)
	for _, c := range conns {
		c.Close()
	}
	after := settle(t, base, "after the branch storm")
	deadline := time.Now().Add(5 * time.Second)
	for a.s.sessions.Count("198.51.100.9") > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := a.s.sessions.Count("198.51.100.9"); n != 0 {
		t.Errorf("%d branches outlive their connections", n)
	}
	t.Logf("60 students exploring from one address: %d told busy; RSS %.0f → %.0f MiB; goroutines %d → %d after leaving", busy, rss0, peak, base, after)
}

// newStudentFrom opens a room's page from an address and returns the
// student cookie.
func newStudentFrom(t *testing.T, a abuseServer, code, from string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", a.ts.URL+"/rooms/"+code, nil)
	req.Header = as(from)
	resp, _ := fetch(t, req)
	for _, c := range resp.Cookies() {
		if c.Name == "stepthrough_student" {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("no student cookie (%s)", resp.Status)
	return ""
}

// A flood of 2,000 messages costs one note, not 2,000 renders; slow
// readers that never read are dropped and leave no goroutine behind.
func TestAbuseFloodAndSlowReaders(t *testing.T) {
	a := newAbuseServer(t, Config{})
	base := runtime.NumGoroutine()
	c := a.ws(t, "/ws?sid=x", as("198.51.100.11"))
	step := []byte(`{"action":"step"}`)
	for range 2000 {
		c.WriteMessage(websocket.TextMessage, step)
	}
	var got, bytes int
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	for {
		_, m, err := c.ReadMessage()
		if err != nil {
			break
		}
		got, bytes = got+1, bytes+len(m)
	}
	if got > 80 || bytes > 2<<20 {
		t.Errorf("a flood of 2000 messages was answered %d times (%d bytes)", got, bytes)
	}
	c.Close()

	// slow readers: connections that never read while a lesson room
	// broadcasts to them
	req, _ := http.NewRequest("POST", a.ts.URL+"/rooms", strings.NewReader("lesson=tokens"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, _ := fetch(t, req)
	loc := resp.Header.Get("Location")
	code, key := strings.Split(loc, "/")[2], strings.SplitN(loc, "key=", 2)[1]
	var slow []net.Conn
	for range 10 {
		h := as("198.51.100.12")
		h.Set("Cookie", newStudentFrom(t, a, code, "198.51.100.12"))
		d := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if tc, ok := nc.(*net.TCPConn); ok {
				tc.SetReadBuffer(4096)
				slow = append(slow, tc)
			}
			return nc, err
		}}
		if _, _, err := d.Dial("ws"+strings.TrimPrefix(a.ts.URL, "http")+"/rooms/"+code+"/ws", h); err != nil {
			t.Fatal(err)
		}
	}
	teach := a.ws(t, "/rooms/"+code+"/ws?as=instructor&key="+key, nil)
	var mu sync.Mutex
	go func() {
		for {
			if _, _, err := teach.ReadMessage(); err != nil {
				return
			}
		}
	}()
	for i := range 300 {
		mu.Lock()
		teach.WriteMessage(websocket.TextMessage, []byte(`{"action":"`+[]string{"step", "back"}[i%2]+`"}`))
		mu.Unlock()
		time.Sleep(15 * time.Millisecond)
	}
	teach.Close()
	after := settle(t, base, "after slow readers")
	for _, nc := range slow {
		nc.Close()
	}
	t.Logf("flood: 2000 messages → %d answers, %d bytes; 10 slow readers: goroutines %d → %d", got, bytes, base, after)
}

// TestSoak runs the abusive clients in a loop for $STEPTHROUGH_SOAK (go
// tool task soak: 10 minutes) while a room of 300 students is stepped
// through beside them, and reports the room's broadcast latency, RSS per
// round and goroutines at the end. Outside CI: it skips unless the
// variable is set.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("STEPTHROUGH_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set STEPTHROUGH_SOAK=10m (go tool task soak) to run the soak")
	}
	a := newAbuseServer(t, Config{MaxPerClient: 20, Limits: classroom.Limits{RoomsPerClient: 1000, LiveRoomsPerClient: 1000}})
	base := runtime.NumGoroutine()
	deadline := time.Now().Add(d)
	var rss []float64
	for round := 1; time.Now().Before(deadline); round++ {
		res := make(chan string, 1)
		go func() {
			r, err := loadtest.Run(context.Background(), []string{a.ts.URL}, 300, 60)
			if err != nil {
				res <- "loadtest: " + err.Error()
				return
			}
			res <- r.String()
		}()
		t.Run("explorers", func(t *testing.T) { abuseExplorers(t, a) })
		t.Run("flood", func(t *testing.T) { abuseFlood(t, a) })
		t.Logf("round %d: 300 students beside the abuse: %s; RSS %.0f MiB", round, <-res, rssMiB(t))
		rss = append(rss, rssMiB(t))
	}
	after := settle(t, base, "after the soak")
	t.Logf("soak of %v: RSS per round %v MiB; goroutines %d → %d", d, rss, base, after)
	if len(rss) > 2 && rss[len(rss)-1]-rss[1] > 200 {
		t.Errorf("RSS grew %.0f MiB from round 2 to the last", rss[len(rss)-1]-rss[1])
	}
}

// abuseExplorers opens 300 Explorer connections from one address, each
// running a prompt, then closes them.
func abuseExplorers(t *testing.T, a abuseServer) {
	run, _ := json.Marshal(map[string]string{"action": "run", "prompt": strings.Repeat("Lily saw a big dog. ", 8), "max_tokens": "64"})
	var conns []*websocket.Conn
	for i := range 300 {
		c := a.ws(t, "/ws?sid=nope"+strconv.Itoa(i), as("198.51.100.7"))
		c.WriteMessage(websocket.TextMessage, run)
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		c.ReadMessage()
		c.Close()
	}
}

// abuseFlood sends 2,000 messages down one connection.
func abuseFlood(t *testing.T, a abuseServer) {
	c := a.ws(t, "/ws?sid=x", as("198.51.100.11"))
	for range 2000 {
		c.WriteMessage(websocket.TextMessage, []byte(`{"action":"step"}`))
	}
	c.Close()
}

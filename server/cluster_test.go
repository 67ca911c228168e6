package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"stepthrough/classroom/pgtest"
)

// instance is one `stepthrough serve` process of a cluster test.
type instance struct {
	t    *testing.T
	bin  string
	args []string
	addr string
	cmd  *exec.Cmd
}

// buildBinary builds the stepthrough command once per test binary.
var buildBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "stepthrough-cluster")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "stepthrough")
	out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// startInstance runs `stepthrough serve` on a free loopback port against
// the store and bus (as busUser, its password from the environment, as
// deploy/compose.yaml gives it), and waits until /readyz answers.
func startInstance(t *testing.T, store, bus string) *instance {
	t.Helper()
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	in := &instance{t: t, bin: bin, addr: addr, args: []string{"serve", "--addr", addr, "--store", store, "--bus", bus, "--bus-user", busUser, "--data-dir", t.TempDir(), "--students-per-address", "100"}}
	in.start()
	t.Cleanup(in.kill)
	return in
}

func (in *instance) url() string { return "http://" + in.addr }

func (in *instance) start() {
	in.t.Helper()
	in.cmd = exec.Command(in.bin, in.args...)
	in.cmd.Dir = in.t.TempDir()
	in.cmd.Env = append(os.Environ(), "STEPTHROUGH_BUS_PASSWORD="+busPassword)
	in.cmd.Stderr = &prefixWriter{t: in.t, prefix: in.addr}
	if err := in.cmd.Start(); err != nil {
		in.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for readyz(in.url()) != http.StatusOK {
		if time.Now().After(deadline) {
			in.t.Fatalf("instance %s not ready within 30 s", in.addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill sends SIGKILL: no drain, no goodbye to its clients.
func (in *instance) kill() {
	if in.cmd == nil {
		return
	}
	in.cmd.Process.Signal(syscall.SIGKILL)
	in.cmd.Wait()
	in.cmd = nil
}

// prefixWriter logs an instance's errors into the test's log.
type prefixWriter struct {
	t      *testing.T
	prefix string
}

func (w *prefixWriter) Write(b []byte) (int, error) {
	if testing.Verbose() {
		w.t.Logf("%s: %s", w.prefix, b)
	}
	return len(b), nil
}

// roundRobin is the load balancer of a cluster test: each request (a
// WebSocket upgrade included) goes to the next instance that accepts a
// connection, as a proxy with health checks would send it.
func roundRobin(t *testing.T, backends []*instance) string {
	var next atomic.Int64
	pick := func() *url.URL {
		for range len(backends) {
			b := backends[int(next.Add(1))%len(backends)]
			if c, err := net.DialTimeout("tcp", b.addr, 200*time.Millisecond); err == nil {
				c.Close()
				u, _ := url.Parse(b.url())
				return u
			}
		}
		return nil
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			if u := pick(); u != nil {
				r.SetURL(u)
			}
			r.Out.Host = r.In.Host
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, err.Error(), http.StatusBadGateway)
		},
	}
	ts := httptest.NewServer(rp)
	t.Cleanup(ts.Close)
	return ts.URL
}

// redial connects a student again after its connection ended, through the
// proxy, as the page's script does.
func redial(t *testing.T, base, code, cookie string) *wsClient {
	t.Helper()
	var c *wsClient
	eventually(t, "a reconnection through the proxy", func() bool {
		u := "ws" + base[len("http"):] + "/rooms/" + code + "/ws"
		conn, _, err := websocketDial(u, http.Header{"Cookie": {cookie}})
		if err != nil {
			return false
		}
		c = wrapClient(t, conn)
		return true
	})
	return c
}

// Three `stepthrough serve` processes behind a round-robin proxy, on one
// PostgreSQL and one nats-server. Students spread over them follow the
// instructor; one instance is killed with SIGKILL mid-lesson; its students
// reconnect through the proxy to the others and find the room at its step
// with every answer kept; the class goes on; the instance comes back.
func TestClusterSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three server processes")
	}
	nats := busWithAuth(t)
	store := pgtest.URL(t)
	var insts []*instance
	for range 3 {
		insts = append(insts, startInstance(t, store, nats.URL()))
	}
	proxy := roundRobin(t, insts)
	code, key := startRoom(t, proxy, url.Values{"lesson": {"logits-and-softmax"}})
	teach := teacher(t, insts[0].url(), code, key) // the instructor's page on the first instance
	const n = 9
	cookies := make([]string, n)
	students := make([]*wsClient, n)
	for i := range n {
		cookies[i] = newStudent(t, proxy, code)
		students[i] = dialRoom(t, proxy, code, cookies[i])
		students[i].wait(`data-state="following"`)
	}
	teach.send(map[string]string{"action": "lesson-step", "to": "1"})
	for _, s := range students {
		s.wait(`data-lesson-step="1"`)
	}
	for i, s := range students[:6] { // six answer before the kill
		s.answer([]string{" Par", " L"}[i%2])
	}

	insts[1].kill()
	moved := 0
	for i, s := range students {
		if !s.closedWithin(2 * time.Second) {
			continue
		}
		moved++
		students[i] = redial(t, proxy, code, cookies[i])
		if m := students[i].wait(`data-lesson-step=`); !strings.Contains(m, `data-lesson-step="1"`) {
			t.Errorf("student %d reconnected to another instance at the wrong step: %.300s", i, m)
		}
	}
	if moved == 0 {
		t.Fatal("no student was on the killed instance (the proxy spreads them round-robin)")
	}
	for i, s := range students[6:] { // three answer after it
		s.answer([]string{" Par", " L"}[i%2])
	}
	st := classroomStore(t, store)
	r, err := st.LoadRoom(context.Background(), code)
	if err != nil || len(r.Answers[1]) != n {
		t.Fatalf("after SIGKILL the store holds %d answers of %d (%v)", len(r.Answers[1]), n, err)
	}
	teach.wait(fmt.Sprintf(`data-testid="answered">%d<`, n))
	teach.send(map[string]string{"action": "lesson-step", "to": "2"})
	for _, s := range students {
		s.wait(`data-lesson-step="2"`)
	}
	insts[1].start()
	late := dialRoom(t, insts[1].url(), code, newStudent(t, insts[1].url(), code))
	late.wait(`data-lesson-step="2"`) // the view it joins to, before its student bar
	t.Logf("SIGKILL: %d of %d students moved to the other instances and resumed at the room's step; %d answers of %d kept; the restarted instance serves the room", moved, n, len(r.Answers[1]), n)
}

// answer sends a student's answer and waits until the server confirms it
// (the confirmation comes after the store has it).
func (c *wsClient) answer(a string) {
	c.t.Helper()
	c.send(map[string]string{"action": "answer", "answer": a})
	c.wait(`data-testid="poll-mine" data-answer="` + a + `"`)
}

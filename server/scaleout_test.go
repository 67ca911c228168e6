package server

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"stepthrough/classroom"
	"stepthrough/classroom/natstest"
	"stepthrough/classroom/pgtest"
)

// cluster is n servers sharing one PostgreSQL store and one NATS bus.
func cluster(t *testing.T, n int, bus string) (servers []*Server, urls []string, store string) {
	t.Helper()
	return clusterWith(t, n, Config{BusURL: bus})
}

// clusterWith is cluster with cfg's bus (and its credentials): the lesson
// models and a fresh store are added.
func clusterWith(t *testing.T, n int, cfg Config) (servers []*Server, urls []string, store string) {
	t.Helper()
	store = pgtest.URL(t)
	cfg.Embedded, cfg.StoreURL = lessonModels(), store
	for range n {
		s := mustNew(t, cfg)
		ts := httptest.NewServer(s.Handler())
		t.Cleanup(ts.Close)
		servers, urls = append(servers, s), append(urls, ts.URL)
	}
	return servers, urls, store
}

// teacher opens the room's instructor connection on base and waits for
// the instructor's page.
func teacher(t *testing.T, base, code, key string) *wsClient {
	t.Helper()
	c := dialRoom(t, base, code, "key="+key)
	c.wait(`id="teach-extras"`)
	return c
}

// follower joins the room on base as a new student and waits until it
// follows the class.
func follower(t *testing.T, base, code string) *wsClient {
	t.Helper()
	c := dialRoom(t, base, code, newStudent(t, base, code))
	c.wait(`data-state="following"`)
	return c
}

var storedRE = regexp.MustCompile(`data-version="(\d+)" data-broadcast="\d+" data-lesson-step="(\d+)" data-step="(\d+)"`)

// shown is the stored version, lesson step and token step a room view
// shows ("" when m is not a room view).
func shown(m string) string {
	if sm := storedRE.FindStringSubmatch(m); sm != nil {
		return strings.Join(sm[1:], "/")
	}
	return ""
}

// latest reads c's messages until none arrives for quiet and returns the
// last room view's stored version, lesson step and token step; each view
// read on the way is passed to each of saw.
func (c *wsClient) latest(quiet time.Duration, saw ...func(string)) string {
	c.t.Helper()
	last := ""
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				return last
			}
			if s := shown(m); s != "" {
				last = s
				for _, f := range saw {
					f(s)
				}
			}
		case <-time.After(quiet):
			return last
		}
	}
}

// Three servers on one store and one bus: students on two of them follow
// an instructor on the third at once, an answer given on one reaches the
// instructor's poll on another, and an event on the bus is a few dozen
// bytes (ids and versions; the state is read from the store).
func TestRoomsAcrossServers(t *testing.T) {
	nats := natstest.Start(t)
	servers, urls, _ := cluster(t, 3, nats.URL())
	code, key := startRoom(t, urls[0], url.Values{"lesson": {"logits-and-softmax"}})
	teach := teacher(t, urls[0], code, key)
	sb := follower(t, urls[1], code)
	sc := follower(t, urls[2], code)

	start := time.Now()
	teach.send(map[string]string{"action": "lesson-step", "to": "1"})
	want := shown(teach.wait(`data-lesson-step="1"`))
	for i, c := range []*wsClient{sb, sc} {
		if got := shown(c.wait(`data-lesson-step="1"`)); got != want {
			t.Errorf("a student on server %d shows %s, the instructor %s (stored version/lesson step/step)", i+2, got, want)
		}
	}
	t.Logf("the step reached students on two other servers in %v", time.Since(start))

	sc.answer(" Par")
	teach.wait(`data-testid="answered">1<`) // the instructor's poll counts an answer given on another server

	st := servers[0].class.Stats()
	if st.Published == 0 || servers[1].class.Stats().Received == 0 {
		t.Errorf("bus: server 1 published %d events, server 2 received %d", st.Published, servers[1].class.Stats().Received)
	}
	ev, _ := json.Marshal(classroom.Event{Room: code, Kind: classroom.EventState, Version: 1 << 20, From: servers[0].class.ServerID()})
	if len(ev) > 200 {
		t.Errorf("an event is %d bytes: %s", len(ev), ev)
	}
	t.Logf("events: %d published by the instructor's server; one is %d bytes: %s", st.Published, len(ev), ev)
}

// Two instructor tabs on two servers acting at once never fork the room:
// each write is based on the version its server holds, the store takes
// one of two racing writes, and the other server reloads. Afterwards every
// server shows the same state, the one in the store.
func TestRoomsNeverFork(t *testing.T) {
	nats := natstest.Start(t)
	servers, urls, _ := cluster(t, 3, nats.URL())
	code, key := startRoom(t, urls[0], url.Values{"explorer": {"/?prompt=Once+upon+a+time&max_tokens=40&seed=3"}})
	ta, tb := teacher(t, urls[0], code, key), teacher(t, urls[1], code, key)
	watch := follower(t, urls[2], code)
	var wg sync.WaitGroup
	for _, tab := range []*wsClient{ta, tb} {
		wg.Go(func() {
			for range 15 {
				tab.send(map[string]string{"action": "step"})
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	conflicts := int64(0)
	for _, s := range servers {
		conflicts += s.class.Stats().Conflicts
	}
	// settle: every server catches up with the last write. No screen, on
	// any server, ever showed a state the store did not accept: one
	// version is one state everywhere.
	states := map[string]string{} // version → lesson step/step
	saw := func(s string) {
		v, st, _ := strings.Cut(s, "/")
		if prev, ok := states[v]; ok && prev != st {
			t.Errorf("version %s was shown as %s and as %s", v, prev, st)
		}
		states[v] = st
	}
	var a, b, w string
	eventually(t, "the three servers to show one state", func() bool {
		a, b, w = ta.latest(300*time.Millisecond, saw), tb.latest(300*time.Millisecond, saw), watch.latest(300*time.Millisecond, saw)
		return a != "" && a == b && b == w
	})
	r, err := servers[2].class.Store().LoadRoom(t.Context(), code)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a, strconv.FormatInt(r.Version, 10)+"/") {
		t.Errorf("the screens show %s, the store holds version %d", a, r.Version)
	}
	t.Logf("30 racing steps from two servers: %d writes refused as conflicts; every screen shows %s", conflicts, a)
}

// A bus outage: rooms keep working; students on other servers catch up
// from the store within FollowEvery (2 s), and at once again when the bus
// is back. Nothing is lost.
func TestRoomsWhenTheBusIsDown(t *testing.T) {
	nats := natstest.Start(t)
	_, urls, _ := cluster(t, 2, nats.URL())
	code, key := startRoom(t, urls[0], url.Values{"explorer": {"/?prompt=Once+upon+a+time&max_tokens=40&seed=3"}})
	teach := teacher(t, urls[0], code, key)
	st := follower(t, urls[1], code)

	nats.Stop()
	eventually(t, "/readyz to say the bus is down", func() bool { return readyz(urls[1]) == http.StatusServiceUnavailable })
	start := time.Now()
	teach.send(map[string]string{"action": "next-token"})
	want := shown(teach.wait(`data-step="1"`))
	if got := shown(st.wait(`data-step="1"`)); got != want {
		t.Errorf("with the bus down the student shows %s, the instructor %s", got, want)
	}
	took := time.Since(start)
	if took > 5*time.Second {
		t.Errorf("with the bus down a step took %v to reach another server (FollowEvery is 2 s)", took)
	}
	t.Logf("bus down: the step reached the other server in %v (from the store)", took)

	nats.Start()
	eventually(t, "the bus to reconnect", func() bool { return readyz(urls[1]) == http.StatusOK })
	start = time.Now()
	teach.send(map[string]string{"action": "next-token"})
	st.wait(`data-step="2"`)
	t.Logf("bus back: the next step reached the other server in %v", time.Since(start))
}

func readyz(base string) int {
	r, err := http.Get(base + "/readyz")
	if err != nil {
		return 0
	}
	r.Body.Close()
	return r.StatusCode
}

// cutProxy forwards TCP connections to a target until cut: then it drops
// every connection and refuses new ones, as a database that went away.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *cutProxy) serve(c net.Conn) {
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.mu.Unlock()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, up)
	p.mu.Unlock()
	go func() { io.Copy(up, c); up.Close() }()
	io.Copy(c, up)
	c.Close()
}

// setCut cuts (or restores) the connection.
func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// A store outage: each server's rooms keep working for the clients on
// that server (every screen says the room is not being saved), students
// on other servers wait, and when the store is back the kept changes are
// written, the other servers catch up, and no answer is lost.
func TestRoomsWhenTheStoreIsDown(t *testing.T) {
	nats := natstest.Start(t)
	direct := pgtest.URL(t)
	u, _ := url.Parse(direct)
	proxy := newCutProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	var urls []string
	for range 2 {
		s := mustNew(t, Config{Embedded: lessonModels(), StoreURL: u.String(), BusURL: nats.URL()})
		ts := httptest.NewServer(s.Handler())
		t.Cleanup(ts.Close)
		urls = append(urls, ts.URL)
	}
	code, key := startRoom(t, urls[0], url.Values{"lesson": {"logits-and-softmax"}})
	teach := teacher(t, urls[0], code, key)
	here := follower(t, urls[0], code)
	there := follower(t, urls[1], code)
	teach.send(map[string]string{"action": "lesson-step", "to": "1"})
	here.wait(`data-lesson-step="1"`)
	there.wait(`data-lesson-step="1"`)

	proxy.setCut(true)
	eventually(t, "/readyz to say the store is down", func() bool { return readyz(urls[0]) == http.StatusServiceUnavailable })
	here.answer(" Par")
	there.answer(" L")
	teach.send(map[string]string{"action": "reveal"})
	here.wait(`data-revealed="true"`) // the instructor's server goes on
	teach.wait("Not saved")
	there.none(`data-revealed="true"`, 500*time.Millisecond) // the other server cannot know yet

	proxy.setCut(false)
	there.wait(`data-revealed="true"`) // the kept state is written and announced
	var stored map[int]map[string]string
	db := classroomStore(t, direct)
	start := time.Now()
	eventually(t, "both answers in the store", func() bool {
		st, err := db.LoadRoom(t.Context(), code)
		if err != nil {
			return false
		}
		stored = st.Answers
		return len(st.Answers[1]) == 2
	})
	t.Logf("%v after the store came back it holds the answers %v and the reveal", time.Since(start), stored)
}

// classroomStore opens the store at u for a test to read.
func classroomStore(t *testing.T, u string) *classroom.Postgres {
	t.Helper()
	st, err := classroom.OpenPostgres(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

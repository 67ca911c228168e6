package server

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"stepthrough/classroom"
)

func classServer(t *testing.T, dataDir string) (*Server, *httptest.Server) {
	t.Helper()
	s := mustNew(t, Config{Embedded: lessonModels(), DataDir: dataDir})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// startRoom posts the form and returns the code and the instructor key.
func startRoom(t *testing.T, base string, form url.Values) (code, key string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/rooms", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /rooms: %s", resp.Status)
	}
	m := regexp.MustCompile(`^/rooms/([A-Z0-9]{6})/teach\?key=([0-9a-f]{32})$`).FindStringSubmatch(resp.Header.Get("Location"))
	if m == nil {
		t.Fatalf("instructor link %q", resp.Header.Get("Location"))
	}
	return m[1], m[2]
}

// wsClient reads a room's messages in the background.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
	msgs chan string
}

// dialRoom connects to a room: "key=K" as its instructor, or a student
// cookie (from newStudent) as that student.
func dialRoom(t *testing.T, base, code, who string) *wsClient {
	t.Helper()
	return dialRoomWith(t, base, code, who, http.Header{})
}

// dialRoomWith is dialRoom with more request headers (X-Forwarded-For).
func dialRoomWith(t *testing.T, base, code, who string, h http.Header) *wsClient {
	t.Helper()
	u := "ws" + strings.TrimPrefix(base, "http") + "/rooms/" + code + "/ws"
	switch {
	case strings.HasPrefix(who, "key="):
		u += "?as=instructor&" + who
	case who == "projector":
		u += "?as=projector"
	case who != "":
		h.Set("Cookie", who)
	}
	conn, resp, err := websocketDial(u, h)
	if err != nil {
		status := ""
		if resp != nil {
			status = resp.Status
		}
		t.Fatalf("dial %s: %v %s", u, err, status)
	}
	return wrapClient(t, conn)
}

func websocketDial(u string, h http.Header) (*websocket.Conn, *http.Response, error) {
	return websocket.DefaultDialer.Dial(u, h)
}

// wrapClient reads conn's messages in the background.
func wrapClient(t *testing.T, conn *websocket.Conn) *wsClient {
	c := &wsClient{t: t, conn: conn, msgs: make(chan string, 256)}
	go func() {
		defer close(c.msgs)
		for {
			_, m, err := conn.ReadMessage()
			if err != nil {
				return
			}
			c.msgs <- string(m)
		}
	}()
	t.Cleanup(func() { conn.Close() })
	return c
}

func (c *wsClient) send(fields map[string]string) {
	c.t.Helper()
	b, _ := json.Marshal(fields)
	if err := c.conn.WriteMessage(websocket.TextMessage, b); err != nil {
		c.t.Fatal(err)
	}
}

// wait returns the first message containing want (skipping others).
func (c *wsClient) wait(want string) string {
	c.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				c.t.Fatalf("connection closed waiting for %q", want)
			}
			if strings.Contains(m, want) {
				return m
			}
		case <-deadline:
			c.t.Fatalf("no message with %q", want)
		}
	}
}

// closedWithin reports whether the connection ends within d (its
// messages meanwhile are read and dropped).
func (c *wsClient) closedWithin(d time.Duration) bool {
	deadline := time.After(d)
	for {
		select {
		case _, ok := <-c.msgs:
			if !ok {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// none checks that no message containing s arrives within d.
func (c *wsClient) none(s string, d time.Duration) {
	c.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				return
			}
			if strings.Contains(m, s) {
				c.t.Fatalf("unexpected message with %q: %.300s", s, m)
			}
		case <-deadline:
			return
		}
	}
}

func studentID(t *testing.T, base, code string) string { return newStudent(t, base, code) }

// newStudent opens the room's page as a new student and returns the
// signed student cookie it sets ("name=value", for a Cookie header).
func newStudent(t *testing.T, base, code string) string {
	t.Helper()
	resp, err := http.Get(base + "/rooms/" + code)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("student page: %s: %s", resp.Status, body)
	}
	for _, c := range resp.Cookies() {
		if c.Name == "stepthrough_student" {
			if !c.HttpOnly {
				t.Error("the student cookie is readable by scripts")
			}
			return c.Name + "=" + c.Value
		}
	}
	t.Fatal("the room's page set no student cookie")
	return ""
}

// instructorClient follows the instructor link as a browser does: the key
// becomes a cookie scoped to the room and leaves the address.
func instructorClient(t *testing.T, base, code, key string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(base + "/rooms/" + code + "/teach?key=" + key)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.RawQuery != "" {
		t.Fatalf("instructor link: %s at %s", resp.Status, resp.Request.URL)
	}
	return c
}

func TestClassroomFollowPollRevealRestart(t *testing.T) {
	dataDir := t.TempDir()
	s, ts := classServer(t, dataDir)
	code, key := startRoom(t, ts.URL, url.Values{"lesson": {"logits-and-softmax"}})

	// Authority: the key opens the instructor page; anything else is refused.
	teacher := instructorClient(t, ts.URL, code, key)
	if resp, err := teacher.Get(ts.URL + "/rooms/" + code + "/poll.csv"); err != nil || resp.StatusCode != 200 {
		t.Errorf("the instructor's cookie does not open the CSV: %v %v", resp.Status, err)
	} else {
		resp.Body.Close()
	}
	// wrong keys and unknown codes get the same answer
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/rooms/" + code + "/teach?key=" + strings.Repeat("0", 32), 404},
		{"/rooms/" + code + "/teach", 404},
		{"/rooms/" + code + "/poll.csv?key=nope", 404},
		{"/rooms/ZZZZZZ/teach?key=" + key, 404},
		{"/rooms/" + strings.ToLower(code), 200}, // codes are typed in any case
		{"/rooms/" + code, 200},
	} {
		resp, err := http.Get(ts.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s: %d, want %d", tc.path, resp.StatusCode, tc.want)
		}
	}
	if resp, err := http.Get(ts.URL + "/rooms/" + code + "/ws?key=" + strings.Repeat("a", 32)); err == nil {
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("ws with a wrong key: %d, want 404", resp.StatusCode)
		}
	}

	teach := dialRoom(t, ts.URL, code, "key="+key)
	teach.wait(`id="teach-extras"`)
	a, b := studentID(t, ts.URL, code), studentID(t, ts.URL, code)
	sa := dialRoom(t, ts.URL, code, a)
	sb := dialRoom(t, ts.URL, code, b)
	sa.wait(`data-state="following"`)
	sb.wait(`data-state="following"`)
	teach.wait(`data-connected="2" data-following="2"`)

	// The instructor moves to the question step; both students follow.
	teach.send(map[string]string{"action": "lesson-step", "to": "1"})
	for _, c := range []*wsClient{sa, sb} {
		m := c.wait(`data-lesson-step="1"`)
		if !strings.Contains(m, `data-testid="poll-option"`) || !strings.Contains(m, `data-testid="panel-hidden"`) {
			t.Errorf("question step: want poll options and the hidden panel: %.500s", m)
		}
	}

	// A student cannot drive the room, and bad input is answered, not obeyed.
	sa.send(map[string]string{"action": "lesson-step", "to": "5"})
	sa.wait(`unknown action`)
	sa.send(map[string]string{"action": "reveal"})
	sa.wait(`unknown action`)
	sa.send(map[string]string{"action": "answer", "answer": " Rome"})
	sa.wait(`not one of the choices`)
	if err := sa.conn.WriteMessage(websocket.TextMessage, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	sa.wait(`malformed message`)

	sa.send(map[string]string{"action": "answer", "answer": " Par"})
	sa.wait(`data-testid="poll-mine"`)
	sb.send(map[string]string{"action": "answer", "answer": " L"})
	sb.wait(`data-testid="poll-mine"`)
	m := teach.wait(`data-testid="answered">2<`)
	if !strings.Contains(m, `data-testid="poll-live"`) || strings.Contains(m, "model probability") {
		t.Errorf("instructor's live poll: want counts without the model's numbers before the reveal: %.800s", m)
	}

	// Exploring: the student's own branch; the class's steps no longer move it.
	sb.send(map[string]string{"action": "explore"})
	m = sb.wait(`data-state="exploring"`)
	if !strings.Contains(m, `id="explorer"`) {
		t.Errorf("explore: want the student's own Explorer: %.300s", m)
	}
	sb.send(map[string]string{"action": "step"})
	sb.wait(`id="explorer"`)
	teach.wait(`data-connected="2" data-following="1"`)

	// The reveal: the engine's answer, the class's histogram beside the
	// model's probabilities.
	teach.send(map[string]string{"action": "reveal"})
	m = sa.wait(`data-revealed="true"`)
	for _, want := range []string{`data-testid="poll-result" data-answer=" Par" data-count="1"`, `data-answer=" L" data-count="1"`, "engine's answer", "model probability"} {
		if !strings.Contains(m, want) {
			t.Errorf("after the reveal, want %q in %.1500s", want, m)
		}
	}
	sa.wait("matches the engine&#39;s answer")
	sb.none(`data-revealed="true"`, 300*time.Millisecond) // exploring: only the status line
	sb.send(map[string]string{"action": "rejoin"})
	sb.wait(`data-revealed="true"`)
	sb.wait(`data-state="following"`)
	sb.wait(`the engine&#39;s answer is &#34; Par&#34;`)
	sa.send(map[string]string{"action": "answer", "answer": " B"})
	sa.wait(`answers are closed`)

	// CSV export.
	resp, err := teacher.Get(ts.URL + "/rooms/" + code + "/poll.csv")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(resp.Body).ReadAll()
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0][3] != "answer" {
		t.Fatalf("CSV: %q", recs)
	}
	got := map[string]string{}
	for _, r := range recs[1:] {
		got[r[3]] = r[5]
		if r[0] != "2" || r[4] != " Par" {
			t.Errorf("CSV row %q: want lesson step 2 and engine answer \" Par\"", r)
		}
	}
	if got[" Par"] != "true" || got[" L"] != "false" {
		t.Errorf("CSV correctness column: %v", got)
	}

	// Restart: a new server on the same data directory has the room, its
	// step, its reveal and its answers; the instructor's key still works.
	ts.Close()
	s.Close()
	_, ts2 := classServer(t, dataDir)
	sa2 := dialRoom(t, ts2.URL, code, a) // the signed cookie still verifies after the restart
	m = sa2.wait(`data-lesson-step="1"`)
	if !strings.Contains(m, `data-answer=" Par" data-count="1"`) {
		t.Errorf("after the restart the poll results are gone: %.800s", m)
	}
	teach2 := dialRoom(t, ts2.URL, code, "key="+key)
	teach2.wait(`id="teach-extras"`)
	teach2.send(map[string]string{"action": "lesson-step", "to": "2"})
	sa2.wait(`data-lesson-step="2"`)
	// The CSV still names the engine's answer of a step the room has left
	// (replayed in a scratch session).
	resp, err = teacher.Get(ts2.URL + "/rooms/" + code + "/poll.csv")
	if err != nil {
		t.Fatal(err)
	}
	recs, err = csv.NewReader(resp.Body).ReadAll()
	resp.Body.Close()
	if err != nil || len(recs) != 3 || recs[1][4] != " Par" || recs[2][4] != " Par" {
		t.Errorf("CSV after leaving the step: %q, %v", recs, err)
	}
}

func TestClassroomJoinCodes(t *testing.T) {
	_, ts := classServer(t, "")
	code, _ := startRoom(t, ts.URL, url.Values{"lesson": {"tokens"}})
	resp, err := noRedirect.Get(ts.URL + "/join?code=" + strings.ToLower(code))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/rooms/"+code {
		t.Errorf("join with the code: %s → %q", resp.Status, resp.Header.Get("Location"))
	}
	// Wrong codes: a clear error, then a limit against guessing.
	statuses := map[int]int{}
	for i := range classroom.JoinFailures + 3 {
		resp, err := noRedirect.Get(ts.URL + "/join?code=ZZZZ" + string(classroom.CodeAlphabet[i%32]) + string(classroom.CodeAlphabet[i/32]))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		statuses[resp.StatusCode]++
	}
	if statuses[404] != classroom.JoinFailures || statuses[429] != 3 {
		t.Errorf("wrong codes: statuses %v, want %d×404 then 429s", statuses, classroom.JoinFailures)
	}
}

func TestClassroomLimits(t *testing.T) {
	s := mustNew(t, Config{Embedded: lessonModels(), Limits: classroom.Limits{MaxStudents: 2, RoomsPerClient: 2}})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	code, _ := startRoom(t, ts.URL, url.Values{"lesson": {"tokens"}})
	startRoom(t, ts.URL, url.Values{"lesson": {"seeds"}})
	req, _ := http.NewRequest("POST", ts.URL+"/rooms", strings.NewReader("lesson=seeds"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("third room from one client: %s, want 429", resp.Status)
	}
	// Cross-site form posts are refused.
	req, _ = http.NewRequest("POST", ts.URL+"/rooms", strings.NewReader("lesson=seeds"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	if resp, err := noRedirect.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site POST /rooms: %s", resp.Status)
		}
	}

	one := dialRoom(t, ts.URL, code, newStudent(t, ts.URL, code))
	dialRoom(t, ts.URL, code, newStudent(t, ts.URL, code)).wait("following")
	one.wait("following")
	third := dialRoom(t, ts.URL, code, newStudent(t, ts.URL, code))
	if _, ok := <-third.msgs; ok {
		t.Error("a third student joined a room limited to two")
	}

	// Flooding: one student's flood is answered with a warning; the other
	// student is unaffected.
	for range 200 {
		one.send(map[string]string{"action": "step"})
	}
	one.wait("too many messages")
}

func TestClassroomFromExplorer(t *testing.T) {
	_, ts := classServer(t, t.TempDir())
	code, key := startRoom(t, ts.URL, url.Values{"explorer": {"/?prompt=Once+upon+a+time&temperature=0&max_tokens=8&seed=3&step=1&stage=2"}})
	resp, err := instructorClient(t, ts.URL, code, key).Get(ts.URL + "/rooms/" + code + "/teach")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), `name="prompt"`) || !strings.Contains(string(page), "Once upon a time") {
		t.Errorf("a room from the Explorer: the instructor page lacks the settings form (%s)", resp.Status)
	}
	teach := dialRoom(t, ts.URL, code, "key="+key)
	m := teach.wait(`id="room-view"`)
	if !strings.Contains(m, `data-step="1"`) || !strings.Contains(m, "seed 3") {
		t.Errorf("room from the Explorer: want token step 1 and seed 3: %.400s", m)
	}
	st := dialRoom(t, ts.URL, code, newStudent(t, ts.URL, code))
	st.wait("following")
	teach.send(map[string]string{"action": "next-token"})
	st.wait(`data-step="2"`)
	teach.send(map[string]string{"action": "run", "prompt": "Lily had a", "temperature": "abc"})
	teach.wait("not a number")
	st.none(`not a number`, 300*time.Millisecond)
	teach.send(map[string]string{"action": "run", "prompt": "Lily had a", "temperature": "0"})
	if m := st.wait(`id="room-view"`); !strings.Contains(m, "had") || !strings.Contains(m, `data-step="0"`) {
		t.Errorf("the instructor's new prompt did not reach the student: %.300s", m)
	}
}

func TestClassroomExpiryAndUnload(t *testing.T) {
	dir := t.TempDir()
	s := mustNew(t, Config{Embedded: lessonModels(), DataDir: dir, Limits: classroom.Limits{RoomTTL: time.Hour}})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	code, key := startRoom(t, ts.URL, url.Values{"lesson": {"seeds"}})
	other, _ := startRoom(t, ts.URL, url.Values{"lesson": {"tokens"}})
	status := func(path string) int {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	// Idle with no one connected: unloaded from memory, reloaded on the next visit.
	s.class.Sweep(t.Context(), time.Now().Add(classroom.IdleUnload+time.Minute))
	if n := s.class.Len(); n != 0 {
		t.Errorf("%d idle rooms still in memory", n)
	}
	instructorClient(t, ts.URL, code, key) // an unloaded room reloads

	// Expired: gone from memory and from the store.
	s.class.Sweep(t.Context(), time.Now().Add(2*time.Hour))
	for _, c := range []string{code, other} {
		if st := status("/rooms/" + c); st != 404 {
			t.Errorf("expired room %s: %d, want 404", c, st)
		}
		if _, err := s.class.Store().LoadRoom(t.Context(), c); err != classroom.ErrNoRoom {
			t.Errorf("expired room %s still stored: %v", c, err)
		}
	}
}

// TestClassroomEnd: the instructor ends the room; every screen says so,
// connections close normally (1000: no reconnecting), the code and the
// instructor link stop working, and the store forgets the room.
func TestClassroomEnd(t *testing.T) {
	s, ts := classServer(t, t.TempDir())
	code, key := startRoom(t, ts.URL, url.Values{"lesson": {"seeds"}})
	teach := dialRoom(t, ts.URL, code, "key="+key)
	st := dialRoom(t, ts.URL, code, newStudent(t, ts.URL, code))
	st.wait("following")
	teach.wait("teach-extras")
	teach.send(map[string]string{"action": "end-room"})
	st.wait(`data-testid="room-ended"`)
	for range st.msgs { // drained until the server closes
	}
	st.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := st.conn.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Errorf("after the end: %v, want a normal close", err)
	}
	for _, p := range []string{"/rooms/" + code, "/rooms/" + code + "/teach?key=" + key} {
		resp, err := http.Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("GET %s after the end: %d", p, resp.StatusCode)
		}
	}
	s.class.Sweep(t.Context(), time.Now())
	if _, err := s.class.Store().LoadRoom(t.Context(), code); err != classroom.ErrNoRoom {
		t.Errorf("an ended room is still stored: %v", err)
	}
}

// The instructor switches a head off for the whole class: every student's
// view shows what it changes, and switching it back restores the run.
func TestClassroomPushesIntervention(t *testing.T) {
	_, ts := classServer(t, t.TempDir())
	code, key := startRoom(t, ts.URL, url.Values{"lesson": {"logits-and-softmax"}})
	teach := dialRoom(t, ts.URL, code, "key="+key)
	teach.wait(`id="teach-extras"`)
	sa := dialRoom(t, ts.URL, code, studentID(t, ts.URL, code))
	sa.wait(`data-state="following"`)
	teach.send(map[string]string{"action": "ablate", "toggle": "L2H1"})
	if m := sa.wait(`data-testid="edit-effect"`); !strings.Contains(m, "Interventions: L2H1") {
		t.Errorf("the student's view: %.400s", m)
	}
	teach.send(map[string]string{"action": "ablate", "toggle": "L2H1"})
	if m := sa.wait(`data-lesson-step`); strings.Contains(m, `data-testid="edit-effect"`) {
		t.Error("the class still sees the head switched off after the instructor switched it back on")
	}
}

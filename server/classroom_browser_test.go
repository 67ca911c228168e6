package server

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"stepthrough/classroom"
)

// waitJS polls a JavaScript condition until it is true.
func waitJS(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err == nil && ok {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s (%s)", what, js)
}

// liveServer serves a classroom server on addr until stopped, as a
// restartable process would.
type liveServer struct {
	s   *Server
	srv *http.Server
}

func startLive(t *testing.T, addr, dataDir string) (*liveServer, string) {
	t.Helper()
	s, err := New(Config{Embedded: lessonModels(), DataDir: dataDir})
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	for range 50 { // the old listener's port may take a moment to free
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	l := &liveServer{s: s, srv: &http.Server{Handler: s.Handler()}}
	go l.srv.Serve(ln)
	return l, ln.Addr().String()
}

// stop ends the server the way Run does: rooms first (their clients are
// told to reconnect), then the HTTP server.
func (l *liveServer) stop() {
	l.s.Close()
	l.srv.Close()
}

// TestClassroomInBrowser is the two-browser end-to-end test: an
// instructor and a student (separate browser contexts, so separate
// cookies) run a lesson; the student follows, branches, rejoins and
// answers a poll the instructor sees and reveals; then the server
// restarts mid-lesson and both pages resume where the room was.
func TestClassroomInBrowser(t *testing.T) {
	actx := chromeAlloc(t)
	dataDir := t.TempDir()
	live, addr := startLive(t, "127.0.0.1:0", dataDir)
	t.Cleanup(func() { live.stop() })
	base := "http://" + addr

	teach, cancelT := chromedp.NewContext(actx)
	defer cancelT()
	teach, cancelTT := context.WithTimeout(teach, 150*time.Second)
	defer cancelTT()
	do(t, teach, chromedp.Navigate(base+"/classroom"))
	student, cancelS := chromedp.NewContext(teach, chromedp.WithNewBrowserContext())
	defer cancelS()

	// The instructor starts a room from a lesson and projects the code.
	do(t, teach, chromedp.Click(chromedp.CSS(`[data-testid="start-room"][data-lesson="logits-and-softmax"]`)))
	do(t, teach, chromedp.WaitVisible(chromedp.CSS(`[data-testid="join-code"]`)))
	code := eval[string](t, teach, `document.querySelector('[data-testid="join-code"]').textContent.trim()`, false)
	if _, ok := classroom.NormalizeCode(code); !ok {
		t.Fatalf("join code %q", code)
	}
	if n := eval[int](t, teach, `document.querySelectorAll('svg[data-testid="qr"] path').length`, false); n != 1 {
		t.Errorf("QR code: %d paths", n)
	}

	// The student joins with the code.
	do(t, student, chromedp.Navigate(base+"/classroom"))
	do(t, student, chromedp.SendKeys(chromedp.CSS(`[data-testid="join-input"]`), strings.ToLower(code)))
	do(t, student, chromedp.Submit(chromedp.CSS(`[data-testid="join-input"]`)))
	do(t, student, chromedp.WaitVisible(chromedp.CSS(`[data-testid="follow-state"]`)))
	followState := `document.querySelector('[data-testid="follow-state"]').textContent.trim()`
	if s := eval[string](t, student, followState, false); s != "following" {
		t.Fatalf("follow-state %q", s)
	}
	waitJS(t, teach, "the instructor to see one student", `document.querySelector('[data-testid="class-count"]').dataset.connected === "1"`)

	// The instructor steps; the student's screen follows.
	do(t, teach, chromedp.Click(chromedp.CSS(`[data-action="lesson-next"]`)))
	waitJS(t, student, "the student to follow to step 2", `document.querySelector('#room-view').dataset.lessonStep === "1"`)
	if n := eval[int](t, student, `document.querySelectorAll('[data-testid="poll-option"]').length`, false); n != 3 {
		t.Errorf("poll options on the student's screen: %d, want 3", n)
	}

	// The student explores on their own; the instructor's steps don't move
	// the student's screen; rejoin comes back to the class's step.
	do(t, student, chromedp.Click(chromedp.CSS(`[data-action="explore"]`)))
	waitJS(t, student, "exploring", followState+` === "exploring"`)
	waitJS(t, student, "the student's own Explorer", `!!document.querySelector('#room-main #explorer')`)
	before := attr(t, student, "#state", "data-url")
	do(t, student, chromedp.Click(chromedp.CSS(`#action-step`)))
	waitChange(t, student, "#state", "data-url", before)
	waitJS(t, teach, "the instructor to see 0 following", `document.querySelector('[data-testid="class-count"]').dataset.following === "0"`)
	statusBefore := attr(t, student, "#room-status", "data-lesson-step")
	do(t, teach, chromedp.Click(chromedp.CSS(`#action-step`)))
	waitJS(t, teach, "the instructor's stage to move", `document.querySelector('#room-view').dataset.currentStage !== "logits"`)
	do(t, teach, chromedp.Click(chromedp.CSS(`#action-back`)))
	waitJS(t, teach, "the instructor's stage to come back", `document.querySelector('#room-view').dataset.currentStage === "logits"`)
	if !eval[bool](t, student, `!!document.querySelector('#room-main #explorer')`, false) {
		t.Error("the instructor's step moved an exploring student's screen")
	}
	if s := attr(t, student, "#room-status", "data-lesson-step"); s != statusBefore {
		t.Errorf("room status %q, want %q", s, statusBefore)
	}
	screenshot(t, student, "classroom-student-exploring")
	do(t, student, chromedp.Click(chromedp.CSS(`[data-action="rejoin"]`)))
	waitJS(t, student, "following again", followState+` === "following"`)
	waitJS(t, student, "the class's step", `document.querySelector('#room-view') && document.querySelector('#room-view').dataset.lessonStep === "1"`)

	// The poll: the student answers, the instructor sees it, then reveals.
	do(t, student, chromedp.Click(chromedp.CSS(`[data-testid="poll-option"][data-answer=" Par"]`)))
	waitJS(t, student, "the student's answer confirmed", `document.querySelector('[data-testid="poll-mine"] code')?.textContent === " Par"`)
	waitJS(t, teach, "the instructor to see the answer", `document.querySelector('[data-testid="answered"]')?.textContent === "1" && document.querySelector('[data-testid="poll-live"] [data-testid="poll-result"][data-answer=" Par"]')?.dataset.count === "1"`)
	screenshot(t, teach, "classroom-instructor-poll")
	do(t, teach, chromedp.Click(chromedp.CSS(`[data-action="reveal"]`)))
	revealed := `document.querySelector('#room-view [data-testid="poll-result"][data-answer=" Par"]')?.dataset.count === "1" && document.querySelector('[data-testid="reveal"]').textContent.includes('" Par"')`
	waitJS(t, student, "the reveal on the student's screen", revealed)
	waitJS(t, student, "the student's own answer marked", `document.querySelector('[data-testid="poll-result"][data-answer=" Par"]').classList.contains('mine')`)
	if bar := eval[string](t, student, `document.querySelector('[data-testid="model-bar"]')?.getAttribute('fill') || ""`, false); bar != "var(--before)" {
		t.Errorf("the model's bar at the reveal: fill %q, want solid", bar)
	}
	screenshot(t, student, "classroom-student-revealed")

	// Restart the server mid-lesson: both pages reconnect on their own and
	// resume at the room's step, with the poll's answers.
	for _, c := range []context.Context{teach, student} {
		eval[bool](t, c, `document.querySelector('#room-view').dataset.old = "1"; true`, false)
	}
	live.stop()
	live, _ = startLive(t, addr, dataDir)
	for _, c := range []context.Context{teach, student} {
		waitJS(t, c, "the page to resume from the new server", `!document.querySelector('#room-view').dataset.old && document.querySelector('#room-view').dataset.lessonStep === "1"`)
		waitJS(t, c, "the poll to survive the restart", revealed)
	}
	waitJS(t, teach, "the student to reconnect", `document.querySelector('[data-testid="class-count"]').dataset.connected === "1"`)
	waitJS(t, student, "following after the restart", followState+` === "following"`)
	// clicked in the page: the resumed page may still swap the bar in, and
	// a node chromedp found can be gone by the time it clicks
	waitJS(t, teach, "the next button", `!!document.querySelector('[data-action="lesson-next"]')`)
	eval[bool](t, teach, `document.querySelector('[data-action="lesson-next"]').click(); true`, false)
	waitJS(t, student, "the student to follow after the restart", `document.querySelector('#room-view').dataset.lessonStep === "2"`)
	// a choice question hides the numbers until the reveal
	if n := eval[int](t, student, `document.querySelectorAll('[data-testid="panel-hidden"]').length`, false); n != 1 {
		t.Errorf("the choice question's step shows its numbers before the reveal")
	}
	waitJS(t, teach, "the reveal button", `!!document.querySelector('[data-action="reveal"]')`)
	eval[bool](t, teach, `document.querySelector('[data-action="reveal"]').click(); true`, false) // in the page, as above
	waitJS(t, student, "the panel after the reveal", `document.querySelector('section[data-stage="softmax"]') !== null`)

	// A handout as PNG: app.js draws the SVG export on a canvas and
	// downloads it (the download is caught to check the image).
	eval[bool](t, student, `window.__dl = null; HTMLAnchorElement.prototype.click = function () { if (this.download) { window.__dl = {name: this.download, href: this.href}; } }; true`, false)
	click(t, student, `[data-action="export-png"]`)
	waitJS(t, student, "the PNG download", `window.__dl !== null`)
	png := eval[string](t, student, `fetch(window.__dl.href).then(r => r.blob()).then(b => createImageBitmap(b).then(i => b.type + " " + i.width + " " + (b.size > 5000)))`, true)
	if png != "image/png 1800 true" {
		t.Errorf("PNG export: %q, want an image/png 1800 px wide", png)
	}

	// A handout: the stage's SVG export, from the student's screen.
	href := attr(t, student, `[data-testid="export-svg"]`, "href")
	resp, err := http.Get(base + href)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("export %s: %s", href, resp.Status)
	}
}

// A student on a phone sees the room's "not saved" warning when the
// store cannot write, without the page growing wider than the screen,
// and the warning goes once the store takes the kept answers.
func TestClassroomStoreWarningInBrowser(t *testing.T) {
	dir := t.TempDir()
	ctx, base, s := browserServer(t, Config{Embedded: lessonModels(), DataDir: dir, Limits: classroom.Limits{StudentsPerAddress: 300}})
	code, key := startRoom(t, base, url.Values{"lesson": {"logits-and-softmax"}})
	teach := dialRoom(t, base, code, "key="+key)
	teach.wait(`id="teach-extras"`)
	teach.send(map[string]string{"action": "lesson-step", "to": "1"})
	teach.wait(`data-lesson-step="1"`)
	do(t, ctx, chromedp.EmulateViewport(375, 740), chromedp.Navigate(base+"/rooms/"+code),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="poll-option"]`)))

	st := fillStore(t, s)
	for i := range 100 { // more answers than the store's pages hold
		c := dialRoom(t, base, code, newStudent(t, base, code))
		c.send(map[string]string{"action": "answer", "answer": []string{" Par", " L", " B"}[i%3]})
		c.wait(`id="room-note"`)
	}
	waitJS(t, ctx, "the warning on the student's phone", `document.querySelector('[data-testid="store-warning"]')?.offsetHeight > 0`)
	fits(t, ctx, 375, "with the warning the page")
	screenshot(t, ctx, "classroom-store-warning-phone")
	if err := st.SetQuota(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the warning to go once the store writes", `!document.querySelector('[data-testid="store-warning"]')`)
}

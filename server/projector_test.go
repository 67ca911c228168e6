package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

// The projector view: the join details and the class's view with no key
// anywhere in it and no control; it follows the instructor, is not
// counted as a student, and its messages are refused. The instructor's
// page keeps its private link folded away.
func TestProjectorView(t *testing.T) {
	_, ts := classServer(t, "")
	code, key := startRoom(t, ts.URL, url.Values{"lesson": {"tokens"}})
	resp, err := http.Get(ts.URL + "/rooms/" + code + "/projector")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(body)
	if resp.StatusCode != 200 || !strings.Contains(page, `data-testid="qr"`) || !strings.Contains(page, `data-testid="join-url"`) || !strings.Contains(page, `data-role="projector"`) {
		t.Fatalf("projector page: %s %.300s", resp.Status, page)
	}
	for _, bad := range []string{key, "?key=", "&key=", `data-action="reveal"`, `data-action="lesson-next"`} {
		if strings.Contains(page, bad) {
			t.Errorf("the projector page carries %q", bad)
		}
	}
	teacher := instructorClient(t, ts.URL, code, key)
	tr, err := teacher.Get(ts.URL + "/rooms/" + code + "/teach")
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := io.ReadAll(tr.Body)
	tr.Body.Close()
	if !strings.Contains(string(tb), `data-testid="projector-link"`) || !strings.Contains(string(tb), `<details class="note" data-testid="instructor-details">`) {
		t.Error("the instructor's page: no projector link, or its private link not folded away")
	}

	teach := dialRoom(t, ts.URL, code, "key="+key)
	teach.wait(`id="teach-extras"`)
	proj := dialRoom(t, ts.URL, code, "projector")
	proj.wait(`id="room-view"`)
	student := dialRoom(t, ts.URL, code, studentID(t, ts.URL, code))
	student.wait(`data-state="following"`)
	teach.wait(`data-connected="1" data-following="1"`) // the projector is not a student
	teach.send(map[string]string{"action": "lesson-step", "to": "1"})
	proj.wait(`data-lesson-step="1"`)
	proj.send(map[string]string{"action": "lesson-step", "to": "0"})
	proj.wait(`takes no actions`)
}

// On a loopback address the join details say students cannot reach it,
// give the command that serves on the network, and list the network
// addresses; listening on every interface, the QR code uses one of them.
func TestJoinDetailsOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr      string
		reachable bool
	}{{"127.0.0.1:8080", false}, {"0.0.0.0:8080", true}} {
		s := mustNew(t, Config{Embedded: lessonModels(), Addr: tc.addr})
		j := s.joinDetails(echoContext(t, s, "http://127.0.0.1:8080/rooms/ABCDEF/projector"), "ABCDEF")
		if !j.Loopback || j.Command != "go run . serve --addr 0.0.0.0:8080" || j.Binary != "stepthrough serve --addr 0.0.0.0:8080" {
			t.Errorf("%s: %+v", tc.addr, j)
		}
		lan := lanAddrs()
		switch {
		case tc.reachable && len(lan) > 0:
			if !strings.Contains(j.URL, lan[0]) {
				t.Errorf("%s: join link %s, not on the network address %s", tc.addr, j.URL, lan[0])
			}
		default:
			if !strings.HasPrefix(j.URL, "http://127.0.0.1:8080/rooms/ABCDEF") {
				t.Errorf("%s: join link %s", tc.addr, j.URL)
			}
		}
		if len(j.LAN) != len(lan) {
			t.Errorf("%s: %d network links for %d addresses", tc.addr, len(j.LAN), len(lan))
		}
	}
}

// echoContext is a request to s as an echo context.
func echoContext(t *testing.T, s *Server, target string) echo.Context {
	t.Helper()
	req := httptest.NewRequest("GET", target, nil)
	return echo.New().NewContext(req, httptest.NewRecorder())
}

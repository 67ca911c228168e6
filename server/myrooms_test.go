package server

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"stepthrough/classroom"
)

// browserClient is one browser: its own cookies, redirects followed.
func browserClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

// post sends a same-origin form post and returns the final page.
func post(t *testing.T, c *http.Client, u string, form url.Values) (int, *goquery.Document) {
	t.Helper()
	resp, err := c.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, err := goquery.NewDocumentFromReader(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, doc
}

// An instructor rehearsing hits the live-room limit with every tab
// closed: the Classroom page lists the rooms this browser started, each
// with an End button, and ending one lets the next room start. Another
// browser sees none of them and cannot end them.
func TestInstructorSeesAndEndsOwnRooms(t *testing.T) {
	s := mustNew(t, Config{Embedded: lessonModels(), Limits: classroom.Limits{LiveRoomsPerClient: 2}})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	me, other := browserClient(t), browserClient(t)

	for _, lesson := range []string{"tokens", "seeds"} {
		if st, _ := post(t, me, ts.URL+"/rooms", url.Values{"lesson": {lesson}}); st != http.StatusOK {
			t.Fatalf("starting a %s room: %d", lesson, st)
		}
	}
	st, doc := post(t, me, ts.URL+"/rooms", url.Values{"lesson": {"tokens"}})
	if st != http.StatusTooManyRequests {
		t.Fatalf("a third live room: %d, want 429", st)
	}
	if msg := doc.Find(`[data-testid="error"]`).Text(); !strings.Contains(msg, "listed below") {
		t.Errorf("the limit's message %q does not point to the list", msg)
	}
	rooms := doc.Find(`[data-testid="my-room"]`)
	if rooms.Length() != 2 {
		t.Fatalf("the limit page lists %d of this browser's rooms, want 2", rooms.Length())
	}
	first, _ := rooms.First().Attr("data-code")
	if !strings.Contains(rooms.First().Text(), "step 1 of") || !strings.Contains(rooms.First().Text(), "expires in") {
		t.Errorf("a listed room says %q: want its step and its expiry", strings.Join(strings.Fields(rooms.First().Text()), " "))
	}
	if href, _ := rooms.First().Find("a").Attr("href"); !strings.HasPrefix(href, "/rooms/"+first+"/teach?key=") {
		t.Errorf("its instructor link is %q", href)
	}

	// Another browser: no list, and its End is refused without a key.
	resp, err := other.Get(ts.URL + "/classroom")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), `data-testid="my-rooms"`) {
		t.Error("another browser sees this browser's rooms")
	}
	if st, _ := post(t, other, ts.URL+"/rooms/"+first+"/end", nil); st != http.StatusNotFound {
		t.Errorf("another browser ending the room: %d, want 404", st)
	}
	if _, err := s.class.Lookup(t.Context(), first); err != nil {
		t.Fatalf("the room ended by another browser: %v", err)
	}

	// This browser ends it: it is gone, the list shrinks, a room starts.
	st, doc = post(t, me, ts.URL+"/rooms/"+first+"/end", nil)
	if st != http.StatusOK || !strings.Contains(doc.Find(`[data-testid="notice"]`).Text(), first+" has ended") {
		t.Errorf("ending %s: %d, notice %q", first, st, doc.Find(`[data-testid="notice"]`).Text())
	}
	if _, err := s.class.Lookup(t.Context(), first); err != classroom.ErrRoomGone {
		t.Errorf("after its end, looking the room up: %v, want ErrRoomGone", err)
	}
	if n := doc.Find(`[data-testid="my-room"]`).Length(); n != 1 {
		t.Errorf("after ending one, the list has %d rooms, want 1", n)
	}
	if st, _ := post(t, me, ts.URL+"/rooms", url.Values{"lesson": {"tokens"}}); st != http.StatusOK {
		t.Errorf("a room after ending one: %d", st)
	}
}

// The list is the client's cookie: whatever it holds, the page lists only
// rooms whose key is right, never panics, and drops the rest.
func TestMyRoomsCookieIsUntrusted(t *testing.T) {
	s := mustNew(t, Config{Embedded: lessonModels()})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	code, key := startRoom(t, ts.URL, url.Values{"lesson": {"tokens"}})
	wrong := strings.Repeat("0", 32)
	for _, v := range []string{
		"", ".", "-", "junk", code + "-" + wrong, code + "-" + key + "." + code + "-" + wrong,
		strings.Repeat(code+"-"+key+".", 40), code + "-" + key + "." + code + "-" + key, "ZZZZZZ-" + key, code + "-" + strings.ToUpper(key)[:31],
	} {
		req, _ := http.NewRequest("GET", ts.URL+"/classroom", nil)
		req.AddCookie(&http.Cookie{Name: myRoomsCookie, Value: v})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := goquery.NewDocumentFromReader(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("cookie %.40q: %d %v", v, resp.StatusCode, err)
		}
		want := 0
		if strings.Contains(v, code+"-"+key) && len(v) <= maxMyRooms*64 {
			want = 1
		}
		if n := doc.Find(`[data-testid="my-room"]`).Length(); n != want {
			t.Errorf("cookie %.40q lists %d rooms, want %d", v, n, want)
		}
	}
}

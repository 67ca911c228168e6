package server

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"stepthrough/classroom/pgtest"
)

// With --store postgres://… a room outlives its server: a second server on
// the same database finds it; /readyz answers while the database does. A
// store address that is not PostgreSQL's is refused in one line.
func TestPostgresStoreServer(t *testing.T) {
	u := pgtest.URL(t)
	first := mustNew(t, Config{Embedded: lessonModels(), StoreURL: u})
	ts := httptest.NewServer(first.Handler())
	t.Cleanup(ts.Close)
	code, key := startRoom(t, ts.URL, url.Values{"lesson": {"tokens"}})
	if r, err := http.Get(ts.URL + "/readyz"); err != nil || r.StatusCode != 200 {
		t.Fatalf("readyz: %v %v", r.StatusCode, err)
	}
	second := mustNew(t, Config{Embedded: lessonModels(), StoreURL: u})
	ts2 := httptest.NewServer(second.Handler())
	t.Cleanup(ts2.Close)
	for _, tc := range []struct {
		key  string
		want int
	}{{key, http.StatusSeeOther}, {strings.Repeat("0", 32), http.StatusNotFound}} {
		resp, err := noRedirect.Get(ts2.URL + "/rooms/" + code + "/teach?key=" + tc.key)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want { // the instructor's key opens it (moved to a cookie); another does not
			t.Errorf("room %s on a second server over the same store, key %s…: %d, want %d", code, tc.key[:4], resp.StatusCode, tc.want)
		}
	}
	if first.mac("student", "s1") != second.mac("student", "s1") {
		t.Error("two servers on one store sign students' cookies differently: a student moved to the other would start over")
	}
	if _, err := New(Config{StoreURL: "mysql://x"}); err == nil || !strings.Contains(err.Error(), "postgres://") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a store address of another kind: %v", err)
	}
}

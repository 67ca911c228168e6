package server

import (
	"net/http"
	"strings"
	"testing"
)

// Every page names its icon, and /favicon.ico (which browsers ask for
// anyway) leads to it instead of a 404.
func TestFavicon(t *testing.T) {
	_, ts := testServer(t)
	resp, err := noRedirect.Get(ts.URL + "/favicon.ico")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/static/favicon.svg" {
		t.Fatalf("/favicon.ico: %s to %q", resp.Status, resp.Header.Get("Location"))
	}
	resp, err = http.Get(ts.URL + "/static/favicon.svg")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "image/svg+xml") {
		t.Errorf("the icon: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	if _, page := getPage(t, ts.URL+"/"); !strings.Contains(page, `<link rel="icon" href="/static/favicon.svg"`) {
		t.Error("the start page does not name its icon")
	}
}

package server

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// The same long system prompt for 16 users, with and without the prefix
// cache: every reply is identical either way, the cache computes fewer
// prompt tokens and reads the rest from kept blocks, and every figure is
// shown over repeated runs with its spread.
func TestServingPrefixCache(t *testing.T) {
	_, ts := servingServer(t)
	form := servingForm(16, 48, 4, 8, 4, "continuous", "prefix", "on", "continuous,contiguous,on")
	form.Set("shared", "40")
	form.Set("rate", "200") // arriving at random: later users find earlier ones ended
	path, code, msg := postServing(t, ts, form, ts.URL)
	if code != http.StatusSeeOther {
		t.Fatalf("POST: %d %s", code, msg)
	}
	readEvents(t, ts, path)
	doc := get(t, ts.URL+path)
	if e := doc.Find(`[data-testid="run-error"]`).Text(); e != "" {
		t.Fatal(e)
	}
	doc.Find(`tr[data-user]`).Each(func(i int, row *goquery.Selection) {
		a, b := row.Find(`[data-setting="0"]`).Text(), row.Find(`[data-setting="1"]`).Text()
		if a == "" || a != b {
			t.Errorf("user %d: %q with the prefix cache, %q without", i+1, a, b)
		}
	})
	row := func(name string) (with, without string) {
		cells := doc.Find(`[data-testid="repeat"][data-name="` + name + `"]`)
		if cells.Length() != 2 {
			t.Fatalf("%s: %d cells", name, cells.Length())
		}
		return cells.Eq(0).Text(), cells.Eq(1).Text()
	}
	median := func(s string) int {
		n, err := strconv.Atoi(strings.Fields(s)[0])
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return n
	}
	computedWith, computedWithout := row("prompt tokens computed")
	cachedWith, cachedWithout := row("prompt tokens read from the prefix cache")
	if median(computedWithout) != 16*48 || median(cachedWithout) != 0 {
		t.Errorf("without the cache: %s computed, %s cached; want all %d computed", computedWithout, cachedWithout, 16*48)
	}
	// the shared 40 tokens fill 2 blocks of 16: every user admitted after
	// the first one's prompt was read finds them (users admitted together
	// with it, under a busy machine, may not)
	if c := median(cachedWith); c%32 != 0 || c < 8*32 || median(computedWith)+c != 16*48 {
		t.Errorf("with the cache: %s computed, %s cached; want 2 blocks of 16 read for most users", computedWith, cachedWith)
	}
	tps, _ := row("generated tokens per second (all users)")
	if !strings.Contains(tps, "(") || !strings.Contains(tps, "–") {
		t.Errorf("tokens/s %q shows no spread", tps)
	}
	if doc.Find(`[data-testid="repeats"] caption`).Text() == "" || !strings.Contains(doc.Find(`[data-testid="verdict"]`).Text(), "Over 3 runs") {
		t.Errorf("verdict: %q", doc.Find(`[data-testid="verdict"]`).Text())
	}
}

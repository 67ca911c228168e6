package server

import (
	"math"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"stepthrough/engine/reftest"
	"stepthrough/present"
)

// The families page runs two models of two families on one prompt: each
// column's tokens, next-token candidates from the engine, and the ways
// only that model's pass differs from llama's; wrong input answers 400
// with the page and the reason.
func TestFamiliesPage(t *testing.T) {
	s := mustNew(t, Config{ModelsDirs: []string{filepath.Dir(reftest.Path(t, "models", "stories260K.gguf"))}, Embedded: lessonModels()})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	q := url.Values{"a": {"lesson.gguf"}, "b": {"stories260K.gguf"}, "prompt": {"Once upon a time, there was a little"}}
	doc := get(t, ts.URL+"/families?"+q.Encode())
	sides := doc.Find(`[data-testid^="family-side-"]`)
	if sides.Length() != 2 {
		t.Fatalf("%d columns", sides.Length())
	}
	only := func(i int) []string {
		var keys []string
		sides.Eq(i).Find(`li.only`).Each(func(_ int, s *goquery.Selection) { keys = append(keys, s.AttrOr("data-feature", "")) })
		return keys
	}
	if got := strings.Join(only(0), ","); !strings.Contains(got, "layernorm") || !strings.Contains(got, "learned-positions") {
		t.Errorf("gpt2's own differences %q", got)
	}
	if n := sides.Eq(1).Find(`[data-testid="family-features"]`).Length(); n != 0 {
		t.Errorf("stories260K (llama) lists %d differences from llama", n)
	}
	for i := range 2 {
		if n := sides.Eq(i).Find(`[data-testid="family-candidate"]`).Length(); n != present.FamiliesTop {
			t.Errorf("column %d: %d candidates", i, n)
		}
		if n := sides.Eq(i).Find(`[data-testid="family-token"]`).Length(); n != 10 {
			t.Errorf("column %d: %d tokens, want 10 (BOS and 9)", i, n)
		}
	}
	// every bar on one 0–100 % scale: its length is its probability, in
	// both columns (not scaled to the column's top candidate)
	doc.Find(`[data-testid="family-candidate"]`).Each(func(i int, row *goquery.Selection) {
		p, err1 := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(row.Find("td.num").Eq(1).Text()), "%"), 64)
		w, err2 := strconv.ParseFloat(row.Find(`[data-testid="pbar"]`).AttrOr("value", ""), 64)
		if err1 != nil || err2 != nil || math.Abs(w-p) > 0.01 || row.Find(`[data-testid="pbar"]`).AttrOr("max", "") != "100" {
			t.Errorf("candidate %d: a bar of %q (of %q) for a probability of %q", i, row.Find(`[data-testid="pbar"]`).AttrOr("value", ""), row.Find(`[data-testid="pbar"]`).AttrOr("max", ""), row.Find("td.num").Eq(1).Text())
		}
	})
	if top := strings.TrimSpace(sides.Eq(0).Find(`[data-testid="family-candidate"] code`).First().Text()); top != `" pig"` {
		t.Errorf("the lesson model's top candidate %s", top)
	}
	// with no models named, B is of another family than A: the embedded
	// qwen3 model, first in name order among the other families
	if b, _ := get(t, ts.URL+"/families").Find(`[data-testid="family-b"] option[selected]`).Attr("value"); b != "lesson-qwen3.gguf" {
		t.Errorf("default model B %q; want the other family's lesson-qwen3.gguf", b)
	}
	for _, bad := range []url.Values{{"a": {"nope.gguf"}}, {"b": {"../etc/passwd"}}, {"prompt": {strings.Repeat("x", 501)}}} {
		d := getStatus(t, ts.URL+"/families?"+bad.Encode(), 400)
		if d.Find(`[data-testid="error"]`).Length() != 1 {
			t.Errorf("%v: no error shown", bad)
		}
	}
}

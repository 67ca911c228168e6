package server

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/go-cmp/cmp"

	"stepthrough/views/htmltest"
)

// siteNav selects the nav bar every page's header carries.
const siteNav = `nav[data-testid="site-nav"]`

// Every page a visitor opens, against its golden outline (testdata/pages;
// go test ./server -run TestPageSnapshots -update rewrites them): its
// structure and words as goquery reads them, numbers masked, on the
// embedded lesson models. The nav bar is masked in each page's golden
// (a new page rewrites one golden, not all of them) and checked on every
// page against one of its own, pages/nav, with the link it marks as the
// current page.
func TestPageSnapshots(t *testing.T) {
	s := mustNew(t, Config{Embedded: lessonModels()})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	pages := []struct{ name, path, current string }{
		{"start", "/", "/"},
		{"explorer", "/?prompt=Lily+saw+a+big&temperature=0&backend=cpu&token=1&stage=softmax", "/"},
		{"explorer-error", "/?prompt=Lily&temperature=warm", "/"},
		{"lessons", "/lessons", "/lessons"},
		{"lesson", "/lessons/tokens", "/lessons"},
		{"compare", "/compare?prompt=Lily+saw+a+big&n=8&lane=greedy&lane=temperature%3D0.8,seed%3D1", "/compare"},
		{"compare-ablated", "/compare?prompt=Lily+saw+a+big&n=8&lane=greedy&lane=greedy,ablate%3DL1mlp%3BL2mlp", "/compare"},
		{"families", "/families", "/families"},
		{"patching", "/patching", "/patching"},
		{"patching-error", "/patching?clean=The+capital+of+France+is&corrupt=The+capital+of+Spain+is", "/patching"},
		{"memory", "/memory", "/memory"},
		{"quantization", "/quantization", "/quantization"},
		{"requests", "/requests", "/requests"},
		{"agent", "/agent", "/agent"},
		{"classroom", "/classroom", "/classroom"},
		{"join", "/join", "/classroom"},
		{"serving", "/serving", "/serving"},
		{"models", "/models", "/models"},
	}
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			resp, err := http.Get(ts.URL + p.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("GET %s: %s", p.path, resp.Status)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			o, err := htmltest.OutlineMasking(bytes.NewReader(body), siteNav)
			if err != nil {
				t.Fatal(err)
			}
			htmltest.Golden(t, "pages/"+p.name, resp.Status+"\n"+o)
			checkSiteNav(t, body, p.current)
		})
	}
}

// checkSiteNav holds a page's nav bar to pages/nav.golden and checks
// that it marks current, and only it, as the page the visitor is on.
func checkSiteNav(t *testing.T, page []byte, current string) {
	t.Helper()
	o, err := htmltest.OutlineOf(bytes.NewReader(page), siteNav)
	if err != nil {
		t.Fatal(err)
	}
	htmltest.Golden(t, "pages/nav", o)
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var marked []string
	doc.Find(siteNav + ` a[aria-current="page"]`).Each(func(_ int, a *goquery.Selection) {
		marked = append(marked, a.AttrOr("href", ""))
	})
	if diff := cmp.Diff([]string{current}, marked); diff != "" {
		t.Errorf("the nav bar's current page (-want +got):\n%s", diff)
	}
}

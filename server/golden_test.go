package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"stepthrough/views/htmltest"
)

// Every page a visitor opens, against its golden outline (testdata/pages;
// go test ./server -run TestPageSnapshots -update rewrites them): its
// structure and words as goquery reads them, numbers masked, on the
// embedded lesson models.
func TestPageSnapshots(t *testing.T) {
	s := mustNew(t, Config{Embedded: lessonModels()})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	pages := []struct{ name, path string }{
		{"start", "/"},
		{"explorer", "/?prompt=Lily+saw+a+big&temperature=0&backend=cpu&token=1&stage=softmax"},
		{"explorer-error", "/?prompt=Lily&temperature=warm"},
		{"lessons", "/lessons"},
		{"lesson", "/lessons/tokens"},
		{"compare", "/compare?prompt=Lily+saw+a+big&n=8&lane=greedy&lane=temperature%3D0.8,seed%3D1"},
		{"compare-ablated", "/compare?prompt=Lily+saw+a+big&n=8&lane=greedy&lane=greedy,ablate%3DL1mlp%3BL2mlp"},
		{"families", "/families"},
		{"patching", "/patching"},
		{"patching-error", "/patching?clean=The+capital+of+France+is&corrupt=The+capital+of+Spain+is"},
		{"memory", "/memory"},
		{"quantization", "/quantization"},
		{"requests", "/requests"},
		{"agent", "/agent"},
		{"classroom", "/classroom"},
		{"join", "/join"},
		{"serving", "/serving"},
		{"models", "/models"},
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
			o, err := htmltest.Outline(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			htmltest.Golden(t, "pages/"+p.name, resp.Status+"\n"+o)
		})
	}
}

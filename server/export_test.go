package server

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"stepthrough/models"
	"stepthrough/views"
)

// TestExportSVG draws every stage of a token step and checks that each is
// well-formed SVG carrying the same numbers as the Explorer's panel.
func TestExportSVG(t *testing.T) {
	s := mustNew(t, Config{Embedded: map[string][]byte{"lesson.gguf": models.Lesson}})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)

	se := newSession("t", "", s.reg)
	defer se.close()
	set := defaultSettings("lesson.gguf")
	set.Prompt, set.Seed = "Lily saw a big", "7"
	se.run(t.Context(), set)
	if se.err != "" {
		t.Fatal(se.err)
	}
	n := len(se.explorer().Stages)
	kinds := map[string]bool{}
	for i := range n {
		se.cur.Seek(0, i)
		e := se.explorer()
		resp, err := http.Get(ts.URL + exportPath(e.URL))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" {
			t.Fatalf("stage %d: %s %s: %.200s", i, resp.Status, resp.Header.Get("Content-Type"), body)
		}
		d := xml.NewDecoder(strings.NewReader(string(body)))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("stage %d (%s): not well-formed SVG: %v", i, e.Current.Name, err)
			}
		}
		kinds[e.Current.Name] = true
		var want []string
		switch p := e.Panel; {
		case p.Logits != nil:
			for _, b := range p.Logits.Top[:3] {
				want = append(want, "logit "+fmt.Sprint(views.FormatNumber(b.Value)))
			}
		case p.Softmax != nil:
			want = append(want, "BEFORE sampling")
		case p.Sampler != nil:
			want = append(want, "AFTER this step")
		case p.Tokenize != nil:
			for _, tk := range p.Tokenize.Tokens {
				want = append(want, fmt.Sprintf("%d", tk.ID))
			}
		}
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				t.Errorf("stage %d (%s): SVG lacks %q", i, e.Current.Name, w)
			}
		}
	}
	for _, k := range []string{"tokenize", "embed", "attention", "mlp", "logits", "softmax", "sampler", "sample", "kv"} {
		if !kinds[k] {
			t.Errorf("no %s stage exported", k)
		}
	}
	for _, tc := range []struct {
		q    string
		want int
	}{
		{"", 400},
		{"?prompt=Lily&temperature=x", 400},
		{"?prompt=Lily&step=900", 404},
	} {
		resp, err := http.Get(ts.URL + "/export.svg" + tc.q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("export %q: %d, want %d", tc.q, resp.StatusCode, tc.want)
		}
	}
}

func exportPath(explorerURL string) string {
	return "/export.svg?" + strings.SplitN(explorerURL, "?", 2)[1]
}

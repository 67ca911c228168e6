package server

import (
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"stepthrough/present"
	"stepthrough/session"
	"stepthrough/spec"
	"stepthrough/views"
)

// TestExportSVG draws every stage of a token step and checks that each is
// well-formed SVG carrying the same numbers as the Explorer's panel.
func TestExportSVG(t *testing.T) {
	s := mustNew(t, Config{Embedded: lessonModels()})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)

	se := session.New("t", "", s.reg)
	defer se.Close()
	run := spec.Default("lesson.gguf")
	run.Prompt, run.Sampler.Seed, run.Sampler.SeedSet = "Lily saw a big", 7, true
	if err := se.Run(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	n := len(present.Explorer(se).Stages)
	kinds := map[string]bool{}
	for i := range n {
		if i > 0 {
			if err := se.Act(t.Context(), "step", nil); err != nil {
				t.Fatal(err)
			}
		}
		e := present.Explorer(se)
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
		want := panelNumbers(e.Panel)
		if len(want) == 0 {
			t.Errorf("stage %d (%s): no numbers to compare", i, e.Current.Name)
		}
		for _, w := range want {
			if !strings.Contains(string(body), html.EscapeString(w)) {
				t.Errorf("stage %d (%s): SVG lacks the panel's %q", i, e.Current.Name, w)
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
		{"?prompt=Lily&step=400", 404},
		{"?prompt=Lily&step=900", 400},
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

// panelNumbers are numbers a stage's panel shows, as the export must print
// them: every stage kind is covered.
func panelNumbers(p views.Panel) []string {
	num, pc := views.FormatNumber, views.FormatPercent
	var want []string
	switch p := p.(type) {
	case *views.TokenizePanel:
		for _, tk := range p.Tokens {
			want = append(want, fmt.Sprintf("%d", tk.ID))
		}
	case *views.EmbedPanel:
		want = append(want, fmt.Sprintf("selects row %d of the %d × %d embedding table", p.ID, p.Vocab, p.Embd))
		for _, r := range p.Rows {
			want = append(want, r.Label)
		}
	case *views.AttentionPanel:
		want = append(want, fmt.Sprintf("Layer %d of %d, head %d of %d", p.Layer+1, p.Layers, p.Head+1, p.Heads))
		for j, v := range p.Cells[p.Current] {
			if !math.IsNaN(float64(v)) && j < len(p.Cells[p.Current]) {
				want = append(want, fmt.Sprintf("%.2f", v))
			}
		}
	case *views.MLPPanel:
		want = append(want, fmt.Sprintf("Layer %d feed-forward (%s)", p.Layer+1, p.Kind), "after MLP "+num(float64(p.NormAfterMLP)))
	case *views.LogitsPanel:
		for _, b := range p.Top[:3] {
			want = append(want, "logit "+num(b.Value))
		}
	case *views.SoftmaxPanel:
		want = append(want, "BEFORE sampling")
		for _, b := range p.Top[:3] {
			want = append(want, "p "+pc(b.Value))
		}
	case *views.SamplerPanel:
		want = append(want, fmt.Sprintf("Sampler step %d of %d: %s", p.Index+1, p.Count, p.Name))
		for _, b := range p.Kept[:min(3, len(p.Kept))] {
			want = append(want, "→ "+pc(b.Value))
		}
		for _, f := range p.Funnel {
			want = append(want, fmt.Sprintf("%d → %d", f.In, f.Out))
		}
	case *views.SamplePanel:
		want = append(want, "p "+pc(p.Chosen.Value))
		if !p.Greedy {
			want = append(want, fmt.Sprintf("u = %.4f", p.U))
		}
	case *views.KVPanel:
		want = append(want, fmt.Sprintf("%d of %d positions cached;", p.Len, p.Capacity), fmt.Sprintf("%d bytes used (%d per position per layer); %d read, not recomputed", p.BytesUsed, p.RowBytes, p.Saved))
	}
	return want
}

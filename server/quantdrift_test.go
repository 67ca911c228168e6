package server

import (
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// /quantization's drift by layer on the copying lesson model: a chart
// with its data table (a row per precision and layer, each value labelled
// with what it is), a whisker and a median point per precision, layer
// and sublayer, the lens's first disagreement in words per precision, the
// most fragile heads; Q4_0 strays further than Q8_0 on average.
func TestQuantizationDriftByLayer(t *testing.T) {
	ts := httptest.NewServer(mustNew(t, Config{Embedded: lessonModels()}).Handler())
	t.Cleanup(ts.Close)
	q := url.Values{"model": {"lesson-v3.gguf"}, "prompt": {"Once upon a time, there was a girl named Lily. Lily liked to play"}, "n": {"2"}, "types": {"Q8_0", "Q4_0"}}
	doc := get(t, ts.URL+"/quantization?"+q.Encode())
	sec := doc.Find(`[data-testid="quant-drift"]`)
	if sec.Length() != 1 {
		t.Fatal("no drift section")
	}
	rows := sec.Find(`[data-testid="quant-drift-row"]`)
	if rows.Length() != 2*4 {
		t.Fatalf("%d drift rows, want 2 precisions × 4 layers", rows.Length())
	}
	mean := map[string]float64{}
	rows.Each(func(_ int, r *goquery.Selection) {
		v, err := strconv.ParseFloat(r.AttrOr("data-mlp", ""), 64)
		if err != nil || v <= 0 || v >= 1 {
			t.Errorf("%s layer %s: median relative error %q", r.AttrOr("data-type", ""), r.AttrOr("data-layer", ""), r.AttrOr("data-mlp", ""))
		}
		mean[r.AttrOr("data-type", "")] += v / 4
	})
	if mean["Q4_0"] <= mean["Q8_0"] {
		t.Errorf("mean relative error after the MLP: Q4_0 %g, Q8_0 %g", mean["Q4_0"], mean["Q8_0"])
	}
	heads := sec.Find(`[data-testid="quant-drift-table"] tr`).First().Text()
	for _, want := range []string{"precision", "layer", "after attention", "after the MLP", "cosine after the MLP (mean)", "logit lens: same top token"} {
		if !strings.Contains(heads, want) {
			t.Errorf("the table's header %q lacks %q", heads, want)
		}
	}
	svg := sec.Find(`svg[data-testid="chart-drift"]`)
	if svg.AttrOr("role", "") != "img" || !strings.Contains(svg.AttrOr("aria-label", ""), "relative error") {
		t.Errorf("chart: role %q, name %q", svg.AttrOr("role", ""), svg.AttrOr("aria-label", ""))
	}
	if n := svg.Find("line.whisker").Length(); n != 2*8 {
		t.Errorf("%d whiskers, want 2 precisions × 8 points", n)
	}
	if n := svg.Find("rect title").Length(); n != 2*8 {
		t.Errorf("%d median points with a title, want 16", n)
	}
	lens := sec.Find(`[data-testid="quant-lens"] li`)
	if lens.Length() != 2 || !strings.HasPrefix(lens.First().Text(), "Q8_0: on the next token") {
		t.Errorf("lens sentences: %q", lens.Text())
	}
	if n, h := sec.Find(`[data-testid="quant-fragile-row"]`).Length(), sec.Find(`[data-testid="quant-fragile-head"]`).Length(); n != 2 || h != 2*3 {
		t.Errorf("%d precisions with %d fragile heads, want 2 with 3 each", n, h)
	}
	if !strings.Contains(sec.Find(`[data-testid="quant-drift-data"] summary`).Text(), "The chart's data") {
		t.Error("the chart's data table has no summary naming it")
	}
}

// Over the work budget the section says so (the estimate, the limit and
// what to change) instead of measuring, and the rest of the page stands.
func TestQuantizationDriftOverBudget(t *testing.T) {
	ts := httptest.NewServer(mustNew(t, Config{Embedded: lessonModels(), WorkBudget: 1000}).Handler())
	t.Cleanup(ts.Close)
	q := url.Values{"model": {"lesson-v3.gguf"}, "n": {"2"}, "types": {"Q8_0"}}
	doc := get(t, ts.URL+"/quantization?"+q.Encode())
	note := doc.Find(`[data-testid="quant-drift-note"]`).Text()
	if !strings.Contains(note, "multiply-adds") || !strings.Contains(note, "use a shorter prompt or fewer precisions") {
		t.Errorf("note %q", note)
	}
	if doc.Find(`[data-testid="chart-drift"]`).Length() != 0 || doc.Find(`[data-testid="quant-row"]`).Length() != 2 {
		t.Error("want no chart and the summary's two rows")
	}
}

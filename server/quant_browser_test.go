package server

import (
	"net/url"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

// The quantization page in a real browser at phone and projector sizes:
// a row per precision (the stored model's KL 0, fewer bits drift more), a
// card per precision at the current step, the drift by layer (its chart
// region inside the viewport, its data table, the fragile heads), the weights
// table and one block's histogram; stepping moves to the next position.
func TestQuantizationPageInBrowser(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	q := url.Values{"model": {"lesson.gguf"}, "prompt": {"Once upon a time, there was a girl named"}, "n": {"12"}, "types": {"Q8_0", "Q4_0"}}
	for _, size := range phoneAndProjector {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(base+"/quantization?"+q.Encode()), chromedp.WaitVisible(chromedp.CSS(`[data-testid="quant-summary"]`)))
		kls := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="quant-row"]')].map(e => e.dataset.kl)`, false)
		if len(kls) != 3 {
			t.Fatalf("%s: %d rows, want the stored model, Q8_0 and Q4_0", size.name, len(kls))
		}
		k0, _ := strconv.ParseFloat(kls[0], 64)
		k1, _ := strconv.ParseFloat(kls[1], 64)
		k2, _ := strconv.ParseFloat(kls[2], 64)
		if k0 != 0 || !(k2 > k1 && k1 > 0) {
			t.Errorf("%s: mean KL %v", size.name, kls)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="quant-step-row"]').length`, false); n != 3 {
			t.Errorf("%s: %d step cards", size.name, n)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="quant-hist"] rect').length`, false); n == 0 {
			t.Errorf("%s: no histogram", size.name)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="quant-tensor"]').length`, false); n < 10 {
			t.Errorf("%s: %d tensors listed", size.name, n)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="quant-drift-row"]').length`, false); n < 2 || n%2 != 0 {
			t.Errorf("%s: %d drift rows, want each layer for Q8_0 and Q4_0", size.name, n)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="quant-fragile-head"]').length`, false); n != 6 {
			t.Errorf("%s: %d fragile heads, want 3 per precision", size.name, n)
		}
		if w := eval[float64](t, ctx, `document.querySelector('[data-testid="chart-drift"]').closest('[role="region"]').getBoundingClientRect().right`, false); w <= 0 || w > float64(size.w) {
			t.Errorf("%s: the drift chart's region ends at %g px in a %d px viewport", size.name, w, size.w)
		}
		fits(t, ctx, int(size.w), size.name+": the page")
		screenshot(t, ctx, "quantization-"+size.name)
		viewShot(t, ctx, `[data-testid="quant-drift"]`, "quantization-drift-"+size.name)
	}
	// the lesson: the word changes at Q4_0, converted in memory for the step
	for step, want := range map[string]string{"0": "\" toy\"", "3": "\" sock\""} {
		do(t, ctx, chromedp.Navigate(base+"/lessons/quantization?step="+step), chromedp.WaitVisible(chromedp.CSS(`[data-stage="softmax"]`)))
		if top := eval[string](t, ctx, `document.querySelector('[data-testid="prob"] td').textContent`, false); top != want {
			t.Errorf("lesson step %s: top token %s, want %s", step, top, want)
		}
	}
	screenshot(t, ctx, "lesson-quantization")
	do(t, ctx, chromedp.Navigate(base+"/quantization?"+q.Encode()), chromedp.WaitVisible(chromedp.CSS(`[data-testid="quant-summary"]`)))
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-testid="quant-step"] nav a:last-child`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="quant-step"] h2 .chip`)))
	if got := eval[string](t, ctx, `document.querySelector('[data-testid="quant-step"] h2').textContent`, false); got == "" {
		t.Error("stepping did not move to step 2")
	}
}

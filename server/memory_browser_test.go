package server

import (
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The memory and cost calculator in a real browser: the round 70 B at
// 2 bytes is 140 GB before any cache, shown with its working, and says
// that those weights alone do not fit in the default 80 GB; a model
// file's throughput is measured on the spot and priced; a bad value is
// one line.
func TestMemoryCalculatorInBrowser(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	for _, size := range phoneAndProjector {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(base+"/memory"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="figures"]`)))
		w := eval[string](t, ctx, `document.querySelector('[data-testid="figure"][data-name="weights"]').textContent`, false)
		if !strings.Contains(w, "70,000,000,000 parameters × 16 bits (F16) ÷ 8 = 140.00 GB") {
			t.Errorf("%s: weights %q", size.name, w)
		}
		fit := eval[string](t, ctx, `document.querySelector('[data-testid="figure"][data-name="users that fit"]').textContent`, false)
		if !strings.Contains(fit, "the weights alone (140.00 GB) do not fit in the 80.00 GB of memory") {
			t.Errorf("%s: 140 GB of weights in 80 GB, users that fit: %q", size.name, fit)
		}
		fits(t, ctx, int(size.w), size.name+": the page")
		screenshot(t, ctx, "memory-"+size.name)
	}
	q := url.Values{"source": {"lesson.gguf"}, "type": {"Q4_K_M"}, "kv": {"4"}, "ctx": {"512"}, "batch": {"4"}, "memory": {"1"}, "price": {"2"}}
	do(t, ctx, chromedp.Navigate(base+"/memory?"+q.Encode()), chromedp.WaitVisible(chromedp.CSS(`[data-testid="measured"]`)))
	if m := eval[string](t, ctx, `document.querySelector('[data-testid="measured"]').textContent`, false); !strings.Contains(m, "3 runs of 32 tokens") || !strings.Contains(m, "slowest run") {
		t.Errorf("the measured throughput shows no spread: %q", m)
	}
	cost := eval[string](t, ctx, `document.querySelector('[data-testid="figure"][data-name="cost per million tokens"]').textContent`, false)
	if !strings.Contains(cost, "$2 an hour ÷ (") || !strings.Contains(cost, "per million tokens") {
		t.Errorf("cost: %q", cost)
	}
	do(t, ctx, chromedp.Navigate(base+"/memory?ctx=abc"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="error"]`)))
	if e := eval[string](t, ctx, `document.querySelector('[data-testid="error"]').textContent`, false); !strings.Contains(e, "context") || strings.Contains(e, "\n") {
		t.Errorf("a bad context: %q", e)
	}
}

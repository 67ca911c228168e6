package server

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The serving floor in a real browser: the form at phone and projector
// sizes, a load under two settings watched live and then measured (the
// same greedy text for every user under both), the prompt-length sweep,
// and a wrong value refused in one line.
func TestServingInBrowser(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	for _, size := range phoneAndProjector {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(base+"/serving"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="start"]`)))
		fits(t, ctx, int(size.w), size.name+": the form")
		screenshot(t, ctx, "serving-form-"+size.name)
	}
	// a load big enough to be watched while it runs
	do(t, ctx, chromedp.EmulateViewport(1920, 1080), chromedp.Navigate(base+"/serving"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="start"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="serving-more"] summary`)), chromedp.SetValue(chromedp.CSS(`input[name="users"]`), "24"), chromedp.SetValue(chromedp.CSS(`input[name="prompt"]`), "48"),
		chromedp.SetValue(chromedp.CSS(`input[name="min"]`), "60"), chromedp.SetValue(chromedp.CSS(`input[name="max"]`), "160"),
		chromedp.SetValue(chromedp.CSS(`input[name="seqs"]`), "8"), chromedp.SetValue(chromedp.CSS(`select[name="cache"]`), "paged"),
		chromedp.SetValue(chromedp.CSS(`select[name="compare"]`), "static,contiguous,on"), chromedp.Click(chromedp.CSS(`input[name="ignore_eos"]`)))
	click(t, ctx, `[data-testid="start"]`)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="run"]`)))
	if eval[string](t, ctx, `document.querySelector('[data-testid="run"]').dataset.done`, false) == "false" {
		// live: the step counter moves and replies grow as tokens stream in
		do(t, ctx, chromedp.Poll[chromedp.Void](`Number(document.querySelector('[data-live="step"]').textContent) > 3 && [...document.querySelectorAll('[data-testid="reply"]')].some(e => e.textContent.length > 0)`))
		screenshot(t, ctx, "serving-live-projector")
	}
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="run"][data-done="true"] [data-testid="verdict"]`)))
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="result"]').length`, false); n != 2 {
		t.Fatalf("%d results, want 2", n)
	}
	same := eval[bool](t, ctx, `[...document.querySelectorAll('tr[data-user]')].every(r => { const c = r.querySelectorAll('[data-testid="reply"]'); return c.length === 2 && c[0].textContent.length > 0 && c[0].textContent === c[1].textContent })`, false)
	if !same {
		t.Error("a user's greedy reply differs between the two settings")
	}
	screenshot(t, ctx, "serving-results-projector")
	do(t, ctx, chromedp.EmulateViewport(390, 844))
	fits(t, ctx, 390, "phone: the results are")
	screenshot(t, ctx, "serving-results-phone")
	do(t, ctx, chromedp.Navigate(base+"/serving/sweep?model=lesson.gguf"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="slope"]`)))
	if s := eval[string](t, ctx, `document.querySelector('[data-testid="slope"]').textContent`, false); !strings.Contains(s, "ms × prompt tokens") {
		t.Errorf("sweep: %q", s)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="chart-sweep"] rect').length`, false); n < 5 {
		t.Errorf("sweep chart: %d points", n)
	}
	screenshot(t, ctx, "serving-sweep-phone")
	do(t, ctx, chromedp.Navigate(base+"/serving/benchmarking"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="output"]`)))
	fits(t, ctx, 390, "phone: measuring honestly")
	screenshot(t, ctx, "serving-honest-phone")
	// a stop string the model writes across token boundaries, typed into the form
	stop, before := stopAcrossTokens(t, mustNew(t, Config{Embedded: lessonModels()}))
	do(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/serving"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="start"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="serving-more"] summary`)), chromedp.SetValue(chromedp.CSS(`input[name="users"]`), "3"), chromedp.SetValue(chromedp.CSS(`input[name="prompt"]`), "16"),
		chromedp.SetValue(chromedp.CSS(`input[name="min"]`), "24"), chromedp.SetValue(chromedp.CSS(`input[name="max"]`), "24"),
		chromedp.SetValue(chromedp.CSS(`select[name="compare"]`), ""), chromedp.SendKeys(chromedp.CSS(`input[name="stop"]`), stop))
	click(t, ctx, `[data-testid="start"]`)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="run"][data-done="true"] [data-testid="result"]`)))
	cell := eval[[]string](t, ctx, `(() => { const c = document.querySelector('tr[data-user="1"] [data-testid="reply"]'); return [c.textContent, c.dataset.finish]; })()`, false)
	if cell[0] != before || cell[1] != "stop" {
		t.Errorf("stop %q: user 1 shows %q (%s), want %q (stop)", stop, cell[0], cell[1], before)
	}
	do(t, ctx, chromedp.Navigate(base+"/serving"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="start"]`)),
		chromedp.SetValue(chromedp.CSS(`input[name="users"]`), "0"))
	// the browser's own validation would stop 0: submit past it, as a hand-made request would
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('form[action="/serving/runs"]').noValidate = true`))
	click(t, ctx, `[data-testid="start"]`)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="error"]`)))
	if e := eval[string](t, ctx, `document.querySelector('[data-testid="error"]').textContent`, false); !strings.Contains(e, "users") || strings.Contains(e, "\n") {
		t.Errorf("users 0: %q", e)
	}
}

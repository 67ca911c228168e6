package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A student switches a head off from the attention panel, at phone and
// projector sizes: the step reruns, the before-and-after box shows the
// likeliest token's probability change, the map marks the layer, the
// page does not overflow, and "Restore the model" brings the run back.
func TestInterveneInBrowser(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	for _, size := range phoneAndProjector {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h),
			chromedp.Navigate(base+"/?prompt=The+capital+of+France+is&temperature=0&backend=cpu&token=1&stage=attention&layer=2"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="intervene-head"]`)))
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="edit-effect"]').length`, false); n != 0 {
			t.Fatalf("%s: an intervention box before any intervention", size.name)
		}
		click(t, ctx, `[data-testid="intervene-head"]`)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="edit-effect"]`)))
		summary := eval[string](t, ctx, `document.querySelector('[data-testid="edit-summary"]').textContent`, false)
		rows := eval[int](t, ctx, `document.querySelectorAll('[data-testid="edit-row"]').length`, false)
		if rows < 2 || summary == "" {
			t.Errorf("%s: %d rows, summary %q", size.name, rows, summary)
		}
		changed := eval[bool](t, ctx, `[...document.querySelectorAll('[data-testid="edit-row"]')].some(r => r.cells[1].textContent !== r.cells[2].textContent)`, false)
		if !changed {
			t.Errorf("%s: switching the head off changed no probability on screen", size.name)
		}
		if p := attr(t, ctx, `[data-testid="intervene-head"]`, "aria-pressed"); p != "true" {
			t.Errorf("%s: the head's button is not pressed after switching it off", size.name)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('.map .part.off').length`, false); n != 1 {
			t.Errorf("%s: %d map parts marked off, want layer 2's attention", size.name, n)
		}
		fits(t, ctx, int(size.w), size.name+": the page")
		screenshot(t, ctx, fmt.Sprintf("intervene-%s", size.name))
		click(t, ctx, `[data-testid="edit-clear"]`)
		do(t, ctx, chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="edit-effect"]`)))
		if url := attr(t, ctx, "#state", "data-url"); url == "" || strings.Contains(url, "ablate") {
			t.Errorf("%s: after restoring, the link is %q", size.name, url)
		}
		// the residual stream: switch off what layer 2's attention adds
		do(t, ctx, chromedp.Navigate(base+"/?prompt=The+capital+of+France+is&temperature=0&backend=cpu&token=1&stage=mlp&layer=2"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="intervene-attn"]`)))
		click(t, ctx, `[data-testid="intervene-attn"]`)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="edit-effect"]`)))
		if p := attr(t, ctx, `[data-testid="intervene-attn"]`, "aria-pressed"); p != "true" {
			t.Errorf("%s: the residual panel's attention button is not pressed after switching it off", size.name)
		}
		fits(t, ctx, int(size.w), size.name+": with the residual intervention the page")
		screenshot(t, ctx, fmt.Sprintf("intervene-residual-%s", size.name))
		// the logit lens: a row per layer at the logits stage
		do(t, ctx, chromedp.Navigate(base+"/?prompt=The+capital+of+France+is&temperature=0&backend=cpu&token=1&stage=logits"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="lens"]`)))
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="lens-row"]').length`, false); n != 4 {
			t.Errorf("%s: %d lens rows, want the lesson model's 4 layers", size.name, n)
		}
		fits(t, ctx, int(size.w), size.name+": with the lens the page")
		screenshot(t, ctx, fmt.Sprintf("lens-%s", size.name))
		// activation patching: the grid of layers × positions
		do(t, ctx, chromedp.Navigate(base+"/patching"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="patch-grid"]`)))
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="patch-row"]').length`, false); n != 4 {
			t.Errorf("%s: %d patching rows, want 4 layers", size.name, n)
		}
		fits(t, ctx, int(size.w), size.name+": the patching page")
		screenshot(t, ctx, fmt.Sprintf("patching-%s", size.name))
	}
}

// A link that switches a head off to its mean over a reference text: the
// box names the mean ablation, the Advanced settings show the text, and
// the page fits a phone and a projector.
func TestMeanAblationInBrowser(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	for _, size := range phoneAndProjector {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h),
			chromedp.Navigate(base+"/?prompt=The+capital+of+France+is&temperature=0&backend=cpu&token=1&stage=attention&layer=2&ablate=L2H1&mean_over=Once+upon+a+time%2C+a+girl+named+Lily+sat+in+the+park+and+read+a+book+about+ships."),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="edit-effect"]`)))
		box := eval[string](t, ctx, `document.querySelector('[data-testid="edit-effect"]').textContent`, false)
		if !strings.Contains(box, "replaced by its mean over the reference text") || !strings.Contains(box, "mean over \"Once upon a time") {
			t.Errorf("%s: the intervention box says %q", size.name, box)
		}
		click(t, ctx, `[data-testid="advanced"] summary`)
		if v := eval[string](t, ctx, `document.querySelector('input[name="mean_over"]').value`, false); !strings.HasPrefix(v, "Once upon a time, a girl") {
			t.Errorf("%s: the settings show the reference text %q", size.name, v)
		}
		fits(t, ctx, int(size.w), size.name+": with a mean ablation the page")
		screenshot(t, ctx, "mean-ablation-"+size.name)
	}
}

package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/hfhub"
	"stepthrough/hfhub/hubtest"
)

// The Models page in a real browser at a phone's and a laptop's width: a
// suggestion fills the form; a pull shows its progress bar and words
// while the Hub stalls mid-way, is cancelled, pulled again to the end
// and listed at once; then deleted. The page never scrolls sideways, and
// axe passes with a pull under way and after it.
func TestModelsPageInBrowser(t *testing.T) {
	w, err := model.Synthesize(model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 2, FFN: 64, Vocab: 700, Context: 64, Type: quant.Q8_0})
	if err != nil {
		t.Fatal(err)
	}
	data := w.Bytes()
	hub := hubtest.New(t)
	hub.Add("org/tiny-GGUF", map[string][]byte{"tiny-Q8_0.gguf": data})
	client := &hfhub.Client{Endpoint: hub.URL(), Cache: hfhub.Cache{Dir: t.TempDir()}, Stall: time.Minute, Backoff: time.Millisecond, HeadBytes: 4 << 10}
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels(), Hub: client})
	a := newAxeAudit(t, ctx)
	const ref = "org/tiny-GGUF:Q8_0"
	half := len(data) / 2
	for _, size := range []screenSize{{"390", 390, 844}, {"1280", 1280, 800}} {
		variant := []axeVariant{{"dark-" + size.name, size.w, size.h, ""}}
		hub.Stall(1, half)
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(base+"/models"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="pull-form"]`)))
		click(t, ctx, `[data-testid="suggest"]`)
		if v, focused := eval[string](t, ctx, `document.getElementById("pull-ref").value`, false), eval[string](t, ctx, `document.activeElement.id`, false); !strings.Contains(v, "SmolLM2-135M") || focused != "pull-ref" {
			t.Errorf("%s: a suggestion filled %q, focus on #%s", size.name, v, focused)
		}
		do(t, ctx, chromedp.SetValue(chromedp.CSS(`#pull-ref`), "Qwen3 0.6B")) // wrong on purpose: the refusal shows where the progress would
		click(t, ctx, `[data-testid="pull"]`)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`#pull-status [data-testid="error"]`)))
		if msg := eval[string](t, ctx, `document.querySelector('#pull-status [data-testid="error"]').textContent`, false); !strings.Contains(msg, "repository") {
			t.Errorf("%s: a malformed name is refused with %q", size.name, msg)
		}
		do(t, ctx, chromedp.SetValue(chromedp.CSS(`#pull-ref`), ref))
		click(t, ctx, `[data-testid="pull"]`)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`[data-testid="pull-progress"][data-state="running"][data-done="%d"]`, half))))
		if v := eval[string](t, ctx, `document.getElementById("pull-bar").value + "/" + document.getElementById("pull-bar").max`, false); v != strconv.Itoa(half)+"/"+strconv.Itoa(len(data)) {
			t.Errorf("%s: the progress bar is at %s", size.name, v)
		}
		if txt := eval[string](t, ctx, `document.getElementById("pull-text").textContent`, false); !strings.Contains(txt, hfhub.Size(int64(half))+" of "+hfhub.Size(int64(len(data)))) || !strings.Contains(txt, "/s, about") {
			t.Errorf("%s: progress words %q", size.name, txt)
		}
		fits(t, ctx, int(size.w), size.name+": the page")
		viewShot(t, ctx, `#pull-title`, "models-pulling-"+size.name)
		a.auditIn("models (pulling, "+size.name+")", variant)
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h))
		do(t, ctx, chromedp.Focus(chromedp.CSS(`[data-testid="cancel"]`)))
		do(t, ctx, chromedp.KeyEvent("\r"))
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="pull-progress"][data-state="cancelled"]`)))
		if eval[int](t, ctx, `document.querySelectorAll('[data-testid="cancel"]').length`, false) != 0 {
			t.Errorf("%s: a cancel button is left after the cancel", size.name)
		}
		if said := liveSays(t, ctx, "cancelled"); !strings.Contains(said, "cancelled") {
			t.Errorf("%s: the live region says %q after the cancel", size.name, said)
		}
		viewShot(t, ctx, `#pull-title`, "models-cancelled-"+size.name)
		click(t, ctx, `[data-testid="pull"]`)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="pull-progress"][data-state="done"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="model-row"][data-model="`+ref+`"]`)))
		if said := liveSays(t, ctx, "done"); !strings.Contains(said, "done") {
			t.Errorf("%s: the live region says %q after the pull", size.name, said)
		}
		fits(t, ctx, int(size.w), size.name+": the page")
		if size.w >= 1280 { // the whole table in view: the delete button not cut by its scroll region
			if out := eval[float64](t, ctx, `(() => { const r = document.querySelector('#models-table .scroll').getBoundingClientRect(); const b = document.querySelector('[data-testid="delete"]').getBoundingClientRect(); return b.right - r.right; })()`, false); out > 0 {
				t.Errorf("%s: the delete button ends %.0f px past the table's region", size.name, out)
			}
		}
		screenshot(t, ctx, "models-pulled-"+size.name)
		a.auditIn("models (pulled, "+size.name+")", variant)
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h))
		click(t, ctx, `[data-model="`+ref+`"] [data-testid="delete"]`)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="notice"]`)))
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-model="`+ref+`"]').length`, false); n != 0 {
			t.Errorf("%s: the deleted model is still listed", size.name)
		}
		viewShot(t, ctx, "", "models-deleted-"+size.name)
	}
}

// liveSays is what the live region says once it says want (htmx settles
// a swap a moment after it), or after a second.
func liveSays(t *testing.T, ctx context.Context, want string) string {
	t.Helper()
	var said string
	for range 50 {
		if said = eval[string](t, ctx, `document.getElementById("announce").textContent`, false); strings.Contains(said, want) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return said
}

package server

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// A student compares the run with Q4_0 by keyboard alone, at phone and
// projector sizes: the picker and its button are reached with Tab, the
// stage shows its vectors under both types with a table of how far apart
// they are, the map marks the four blocks passed, the live region says
// it, focus stays on the button, the link carries vs=Q4_0; from the
// logits on, the next-token probabilities under both; a type the server
// does not know (sent by hand) is refused in words.
func TestVersusInBrowser(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	for _, size := range phoneAndProjector {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h),
			chromedp.Navigate(base+"/?prompt=Once+upon+a+time%2C+there+was+a+girl+named&temperature=0&backend=cpu&token=1&stage=mlp&layer=2"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="vs-type"]`)))
		w := newKeyWalk(t, ctx, size.name)
		do(t, ctx, chromedp.Focus(chromedp.CSS(`#action-step`)))
		w.tabTo(`[data-testid="vs-type"]`, 60)
		w.key("Q4_0") // the select's type-ahead
		if v := eval[string](t, ctx, `document.querySelector('[data-testid="vs-type"]').value`, false); v != "Q4_0" {
			t.Fatalf("%s: typing Q4_0 on the picker chose %q", size.name, v)
		}
		w.tabTo(`[data-testid="vs-show"]`, 3)
		w.after(kb.Enter, "the comparison", `!!document.querySelector('[data-testid="versus"]')`, `[data-testid="vs-show"]`)

		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="versus-row"]').length`, false); n != 2 {
			t.Errorf("%s: %d compared vectors at layer 2's MLP, want its output and the stream after it", size.name, n)
		}
		cells := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="versus-table"] td')].map(c => c.textContent)`, false)
		if len(cells) != 6 || !strings.HasSuffix(cells[0], "%") || cells[0] == "0 %" {
			t.Errorf("%s: the table's cells %q", size.name, cells)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('.map .part.drift1, .map .part.drift2, .map .part.drift3').length`, false); n != 4 {
			t.Errorf("%s: the map marks %d blocks, want layers 1 and 2's attention and MLP", size.name, n)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="versus-drift"] tr[data-level]').length`, false); n != 4 {
			t.Errorf("%s: the drift table has %d rows, want 4", size.name, n)
		}
		if said := liveRegion(t, ctx); !strings.Contains(said, "Beside Q4_0: the residual stream after layer 2 differs by a relative error of") {
			t.Errorf("%s: the live region says %q", size.name, said)
		}
		if url := attr(t, ctx, "#state", "data-url"); !strings.Contains(url, "vs=Q4_0") {
			t.Errorf("%s: the view's link %q does not carry the type", size.name, url)
		}
		fits(t, ctx, int(size.w), size.name+": the page")
		screenshot(t, ctx, "versus-mlp-"+size.name)

		do(t, ctx, chromedp.Navigate(base+"/?prompt=Once+upon+a+time%2C+there+was+a+girl+named&temperature=0&backend=cpu&token=1&stage=softmax&vs=Q4_0"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="versus-tops"]`)))
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="versus-tops"] tr').length`, false); n != 9 {
			t.Errorf("%s: %d rows in the next-token table, want a header and 8 tokens", size.name, n)
		}
		if kl := eval[string](t, ctx, `document.querySelector('[data-testid="versus-kl"]').textContent`, false); kl == "" || kl == "0" {
			t.Errorf("%s: KL %q", size.name, kl)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="versus-drift"] tr[data-level]').length`, false); n != 8 {
			t.Errorf("%s: at softmax the drift table has %d rows, want every block of 4 layers", size.name, n)
		}
		fits(t, ctx, int(size.w), size.name+": at softmax the page")
		screenshot(t, ctx, "versus-softmax-"+size.name)

		// wrong input on purpose: a type the picker does not offer
		eval[bool](t, ctx, `(() => { const o = document.createElement("option"); o.value = o.textContent = "Q9_9"; const s = document.querySelector('[data-testid="vs-type"]'); s.append(o); s.value = "Q9_9"; return true; })()`, false)
		click(t, ctx, `[data-testid="vs-show"]`)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="error"]`)))
		if msg := eval[string](t, ctx, `document.querySelector('[data-testid="error"]').textContent`, false); !strings.Contains(msg, "Q9_9") {
			t.Errorf("%s: an unknown type's error says %q", size.name, msg)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="versus"]').length`, false); n != 1 {
			t.Errorf("%s: after a refused type the comparison with Q4_0 is gone (%d)", size.name, n)
		}
	}
}

// The lesson "Where quantization bites" at phone and projector sizes: the
// question hides the comparison until it is answered; once answered, the
// comparison and its drift table are there, and the page fits.
func TestWhereQuantizationBitesInBrowser(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	for _, size := range phoneAndProjector {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h),
			chromedp.Navigate(base+"/lessons/where-quantization-bites?step=0"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="panel-hidden"]`)))
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="versus"]').length`, false); n != 0 {
			t.Errorf("%s: the comparison shows before the question is answered", size.name)
		}
		do(t, ctx, chromedp.Click(chromedp.CSS(`[data-testid="choice"] input`)), chromedp.Click(chromedp.CSS(`[data-testid="question"] button[type="submit"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="feedback"]`)))
		// the picked choice says "your answer" once (the page's words, no second one drawn by the style sheet)
		if got := eval[string](t, ctx, `(() => { const l = document.querySelector('label.picked'); return l.textContent.split('your answer').length - 1 + ' ' + getComputedStyle(l, '::after').content; })()`, false); got != "1 none" {
			t.Errorf("%s: the picked choice's \"your answer\" count and ::after content: %s", size.name, got)
		}
		do(t, ctx, chromedp.Navigate(base+"/lessons/where-quantization-bites?step=1"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="versus-drift"]`)))
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="versus-drift"] tr[data-level]').length`, false); n != 8 {
			t.Errorf("%s: at layer 4's MLP the drift table has %d rows, want 8", size.name, n)
		}
		fits(t, ctx, int(size.w), size.name+": the lesson page")
		screenshot(t, ctx, "lesson-where-quantization-bites-"+size.name)
	}
}

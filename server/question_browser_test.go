package server

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
)

// A room on "The head that copies", seen on a phone and on the projector:
// its first question shows the prompt it asks about, above the question,
// readable at both sizes; the instructor's Reveal (the model's top list
// holds a byte token, id 138, the byte 0x8a) reaches both screens, the
// token written as the Explorer writes it, and neither reconnects.
func TestRoomQuestionInBrowser(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	code, key := startRoom(t, base, url.Values{"lesson": {"the-head-that-copies"}})
	teach := dialRoom(t, base, code, "key="+key)
	teach.wait(`id="teach-extras"`)
	const prompt = " Ab dog movie hill fox Port Sa gave Dom Eurcebab Ab dog movie hill fox Port"
	screens := map[string]context.Context{}
	for _, size := range phoneAndProjector {
		tab, cancel := chromedp.NewContext(ctx)
		t.Cleanup(cancel)
		page := "/rooms/" + code
		if size.name == "projector" {
			page += "/projector"
		}
		do(t, tab, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(base+page),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="poll"] [data-testid="question-prompt"] code`)))
		eval[bool](t, tab, `window.__closes = 0; document.addEventListener("htmx:wsClose", () => window.__closes++, true); true`, false)
		got := eval[string](t, tab, `document.querySelector('[data-testid="question-prompt"] code').textContent`, false)
		above := eval[bool](t, tab, `(() => { const p = document.querySelector('[data-testid="question-prompt"]'); return p.nextElementSibling.textContent === "Which token comes next?" && p.getBoundingClientRect().width > 0 })()`, false)
		if got != prompt || !above {
			t.Errorf("%s: the question's text is %q (above the question: %v), want %q", size.name, got, above, prompt)
		}
		fits(t, tab, int(size.w), size.name+": the page")
		do(t, tab, chromedp.ScrollIntoView(chromedp.CSS(`[data-testid="poll"]`)))
		screenshot(t, tab, fmt.Sprintf("room-question-%s", size.name))
		screens[size.name] = tab
	}
	do(t, screens["phone"], chromedp.Click(chromedp.CSS(`[data-testid="poll-option"][data-answer=" Sa"]`)))
	teach.wait(`data-testid="answered">1<`)
	teach.send(map[string]string{"action": "reveal"})
	for _, size := range phoneAndProjector {
		tab := screens[size.name]
		waitJS(t, tab, size.name+": the reveal with the byte token's row", `document.querySelector('#room-view [data-testid="poll-result"][data-answer='+JSON.stringify('"\\x8a"')+'] code')?.textContent === '"\\x8a"'`)
		if n := eval[int](t, tab, `window.__closes`, false); n != 0 {
			t.Errorf("%s: the connection closed %d times at the reveal", size.name, n)
		}
		do(t, tab, chromedp.ScrollIntoView(chromedp.CSS(`[data-testid="poll"]`)))
		screenshot(t, tab, fmt.Sprintf("room-revealed-%s", size.name))
	}
	waitJS(t, screens["phone"], "the phone's answer marked", `document.querySelector('[data-testid="poll-result"][data-answer=" Sa"]').classList.contains('mine')`)
}

package server

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"stepthrough/classroom"
	"stepthrough/views"
)

// Every page, at a phone's width, a laptop's and a projector's: nothing
// is wider than the screen (a table too wide scrolls inside its panel),
// and each page and size is screenshotted (STEPTHROUGH_SCREENSHOTS keeps
// them) to be looked at.
func TestEveryPageFitsEveryScreen(t *testing.T) {
	ctx, base, s := browserServer(t, Config{Embedded: lessonModels(), Limits: classroom.Limits{StudentsPerAddress: 300}})
	code, key := startRoom(t, base, url.Values{"lesson": {"logits-and-softmax"}})
	teach := dialRoom(t, base, code, "key="+key)
	teach.wait(`id="teach-extras"`)
	teach.send(map[string]string{"action": "lesson-step", "to": "1"})
	teach.wait(`data-lesson-step="1"`)
	st := dialRoom(t, base, code, newStudent(t, base, code))
	st.send(map[string]string{"action": "answer", "answer": " Par"})
	st.wait(`id="room-note"`)
	teach.send(map[string]string{"action": "reveal"})
	teach.wait(`data-testid="reveal"`)

	pages := []struct{ name, path string }{
		{"explorer", "/?prompt=" + url.QueryEscape("Once upon a time") + "&max_tokens=4&seed=3"},
		{"explorer-embed", "/?prompt=" + url.QueryEscape("The little dog ran to the park and the cat sat") + "&max_tokens=4&seed=3&stage=embed"},
		{"explorer-attention", "/?prompt=" + url.QueryEscape("Once upon a time") + "&max_tokens=4&seed=3&step=2&stage=attention&layer=2"},
		{"explorer-sampler", "/?prompt=" + url.QueryEscape("Once upon a time") + "&max_tokens=4&seed=3&stage=sampler&filter=2"},
		{"explorer-mlp", "/?prompt=" + url.QueryEscape("Once upon a time") + "&max_tokens=4&seed=3&stage=mlp&layer=3"},
		{"explorer-logits", "/?prompt=" + url.QueryEscape("Once upon a time") + "&max_tokens=4&seed=3&stage=logits"},
		{"explorer-softmax", "/?prompt=" + url.QueryEscape("Once upon a time") + "&max_tokens=4&seed=3&stage=softmax"},
		{"explorer-sample", "/?prompt=" + url.QueryEscape("Once upon a time") + "&max_tokens=4&seed=3&stage=sample"},
		{"explorer-kv", "/?prompt=" + url.QueryEscape("Once upon a time") + "&max_tokens=4&seed=3&token=2&stage=kv"},
		{"lessons", "/lessons"},
		{"lesson-patching-grid", "/lessons/where-the-answer-lives/5"},
		{"classroom", "/classroom"},
		{"compare", "/compare?" + url.Values{"prompt": {"Lily saw a"}, "n": {"6"}, "step": {"3"},
			"lane": {"greedy", "temperature=1,top-p=0.9,seed=2", "beam=2", "greedy,spec=lesson-draft.gguf,k=4"}}.Encode()},
		{"quantization", "/quantization"},
		{"families", "/families"},
		{"memory", "/memory"},
		{"serving", "/serving"},
		{"requests", "/requests"},
		{"agent", "/agent"},
		{"room-student", "/rooms/" + code},
		{"room-projector", "/rooms/" + code + "/projector"},
		{"room-teach", "/rooms/" + code + "/teach?key=" + key},
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range s.lessons {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		for i, step := range s.lessons[n].Steps {
			if i == 0 || step.Question != nil { // the opening and every question
				pages = append(pages, struct{ name, path string }{fmt.Sprintf("lesson-%s-%d", n, i+1), fmt.Sprintf("/lessons/%s?step=%d", n, i)})
			}
		}
	}
	for _, size := range []struct {
		name string
		w, h int64
	}{{"phone", 390, 844}, {"laptop", 1280, 800}, {"projector", 1920, 1080}} {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h))
		for _, p := range pages {
			do(t, ctx, chromedp.Navigate(base+p.path), chromedp.WaitReady(chromedp.CSS(`main`)))
			fits(t, ctx, int(size.w), p.name+" on a "+size.name)
			if strings.HasPrefix(p.name, "lesson-") && size.name != "phone" {
				continue // lessons: their phone screenshots
			}
			screenshot(t, ctx, p.name+"-"+size.name)
		}
	}
}

// The projector view is made for a room: at 1920×1080 its text is at
// least 28 px, the class's view spans the width, the join code sits
// large in a corner and opens full-screen on demand, and nothing meant
// for the instructor (the unreachable-address advice) is on it.
func TestProjectorViewForARoom(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	code, key := startRoom(t, base, url.Values{"lesson": {"logits-and-softmax"}})
	teach := dialRoom(t, base, code, "key="+key)
	teach.wait(`id="teach-extras"`)
	noSmallText := func(when, sel string) {
		for _, theme := range []string{"", "projector"} {
			do(t, ctx, chromedp.EmulateViewport(1920, 1080), chromedp.Navigate(base+"/rooms/"+code+"/projector"), chromedp.WaitVisible(chromedp.CSS(sel)))
			eval[any](t, ctx, fmt.Sprintf(`document.documentElement.dataset.theme = %q`, theme), false)
			if small := eval[[]string](t, ctx, projectorSmallTextJS, false); len(small) > 0 {
				t.Errorf("%s, theme %q: text under 28 px at 1920×1080: %q", when, theme, small)
			}
		}
	}
	for step := range 3 { // every step of the lesson, and the question revealed, in both themes: no text under 28 px
		teach.send(map[string]string{"action": "lesson-step", "to": fmt.Sprint(step)})
		teach.wait(fmt.Sprintf(`data-lesson-step="%d"`, step))
		noSmallText(fmt.Sprintf("step %d", step+1), fmt.Sprintf(`#room-view[data-lesson-step="%d"]`, step))
		if step == 1 {
			st := dialRoom(t, base, code, newStudent(t, base, code))
			st.send(map[string]string{"action": "answer", "answer": " Par"})
			st.wait(`id="room-note"`)
			teach.send(map[string]string{"action": "reveal"})
			teach.wait(`data-testid="reveal"`)
			noSmallText("step 2 revealed", `[data-testid="reveal"]`)
		}
	}
	eval[any](t, ctx, `document.documentElement.dataset.theme = ""`, false)
	for _, size := range []struct {
		name string
		w, h int64
	}{{"720p", 1280, 720}, {"1080p", 1920, 1080}} {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(base+"/rooms/"+code+"/projector"),
			chromedp.WaitVisible(chromedp.CSS(`#room-view`)))
		px := eval[float64](t, ctx, `parseFloat(getComputedStyle(document.querySelector('#room-view p, #room-view')).fontSize)`, false)
		if want := 28 * float64(size.w) / 1920; px < want-0.5 {
			t.Errorf("%s: text %.1f px, want at least %.1f", size.name, px, want)
		}
		if o := eval[string](t, ctx, themeUnderJoinJS, false); o != "" {
			t.Errorf("%s: %s", size.name, o)
		}
		if w := eval[float64](t, ctx, `document.querySelector('#room-main').getBoundingClientRect().width`, false); w < 0.9*float64(size.w) {
			t.Errorf("%s: the class's view is %.0f px of %d", size.name, w, size.w)
		}
		badge := eval[[]float64](t, ctx, `(r => [r.right, r.top, r.width])(document.querySelector('[data-testid="projector-join"]').getBoundingClientRect())`, false)
		if badge[0] < float64(size.w)-20 || badge[1] > 20 || badge[2] > float64(size.w)/3 {
			t.Errorf("%s: the join badge at right %.0f, top %.0f, %.0f wide: want a corner", size.name, badge[0], badge[1], badge[2])
		}
		if eval[bool](t, ctx, `!!document.querySelector('[data-testid="lan-help"]')`, false) {
			t.Errorf("%s: the instructor's address advice is on the projected screen", size.name)
		}
		if hit := eval[string](t, ctx, `(b => { const r = b.getBoundingClientRect(); const e = document.elementFromPoint(r.left - 8, r.top + r.height / 2); return e ? e.tagName + ' ' + e.textContent.slice(0, 20) : '' })(document.querySelector('[data-testid="projector-join"]'))`, false); strings.Contains(hit, "Projector") {
			t.Errorf("%s: the badge sits against the header's button", size.name)
		}
		screenshot(t, ctx, "projector-"+size.name)
		click(t, ctx, `[data-testid="projector-join"] summary`)
		full := eval[[]float64](t, ctx, `(r => [r.width, r.height])(document.querySelector('[data-testid="projector-join"]').getBoundingClientRect())`, false)
		qr := eval[float64](t, ctx, `document.querySelector('[data-testid="projector-join"] [data-testid="qr"]').getBoundingClientRect().height`, false)
		if full[0] < float64(size.w)-2 || full[1] < float64(size.h)-2 || qr < 0.4*float64(size.h) {
			t.Errorf("%s: opened, the join details are %.0f×%.0f with a %.0f px QR code: want the whole screen", size.name, full[0], full[1], qr)
		}
		screenshot(t, ctx, "projector-join-"+size.name)
		click(t, ctx, `[data-testid="projector-join"] summary`)
	}
	// a phone that opens the projector's page: the join badge covers nothing
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/rooms/"+code+"/projector"), chromedp.WaitVisible(chromedp.CSS(`#room-view`)))
	if o := eval[string](t, ctx, themeUnderJoinJS, false); o != "" {
		t.Errorf("phone: %s", o)
	}
	if o := eval[string](t, ctx, `(j => { const r = j.getBoundingClientRect(), h = document.querySelector('header h1').getBoundingClientRect();
		return Math.min(r.right, h.right) > Math.max(r.left, h.left) && Math.min(r.bottom, h.bottom) > Math.max(r.top, h.top) ? "the join badge covers the title" : ""; })(document.querySelector('[data-testid="projector-join"]'))`, false); o != "" {
		t.Errorf("phone: %s", o)
	}
	screenshot(t, ctx, "projector-phone")
}

// projectorSmallTextJS lists the projector view's texts under 28 px at
// 1920 wide (28/1920 of the width): every element holding text of its
// own, drawings (SVG) aside.
const projectorSmallTextJS = `(() => { const min = 28 * innerWidth / 1920 - 0.5;
	return [...document.querySelectorAll('#room-view *')].filter(e => !e.closest('svg') && !e.closest('.visually-hidden') && e.getClientRects().length > 0 &&
		[...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()) && parseFloat(getComputedStyle(e).fontSize) < min)
		.map(e => e.localName + (e.className ? '.' + e.className : '') + ' ' + getComputedStyle(e).fontSize + ' ' + JSON.stringify(e.textContent.trim().slice(0, 24))).slice(0, 12); })()`

// themeUnderJoinJS says whether the join badge covers the header's
// theme button, or could cover the header's content whatever its
// status line says (the badge beside the header, the header's content
// box reaching under it); "" when not.
const themeUnderJoinJS = `(() => { const j = document.querySelector('[data-testid="projector-join"]').getBoundingClientRect(), b = document.querySelector('header [data-action="theme"]').getBoundingClientRect();
	if (Math.min(j.right, b.right) > Math.max(j.left, b.left) && Math.min(j.bottom, b.bottom) > Math.max(j.top, b.top)) return "the join badge covers the theme button (" + Math.round(b.right) + " > " + Math.round(j.left) + ")";
	const h = document.querySelector('body > header'), hr = h.getBoundingClientRect(), right = hr.right - parseFloat(getComputedStyle(h).paddingRight);
	return j.top < hr.bottom && right > j.left + 1 ? "the header's content reaches " + Math.round(right) + " px, under the join badge from " + Math.round(j.left) : ""; })()`

// The jargon a page shows is explained where it appears: each term is a
// glossary word with its sentence on hover, and a tap (focus) shows it
// under the word — on a phone too, without widening the page.
func TestJargonIsExplained(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error { // :focus as in a focused window
		_, err := cdp.Call(ctx, tg, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
		return err
	}))
	explorer := "/?" + url.Values{"prompt": {"The little dog ran to the park"}, "max_tokens": {"4"}, "seed": {"3"}}.Encode()
	for _, tt := range []struct {
		path  string
		terms []string
	}{
		{explorer + "&stage=sampler&filter=3", []string{"typical-p", "prefill", "TTFT", "TPOT"}},
		{explorer + "&stage=embed", []string{"PCA"}},
		{"/compare?" + url.Values{"prompt": {"Lily saw a"}, "n": {"4"}, "lane": {"greedy", "temperature=1,seed=2"}}.Encode(), []string{"perplexity"}},
		{"/quantization", []string{"KL"}},
		{"/lessons/logits-and-softmax/2?answer=%20Par", []string{"token"}}, // a lesson's narration once answered, from the same glossary
	} {
		do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+tt.path), chromedp.WaitReady(chromedp.CSS(`main`)))
		for _, term := range tt.terms {
			sel := fmt.Sprintf(`dfn.term[data-term=%q]`, term)
			if n := eval[int](t, ctx, `document.querySelectorAll('`+sel+`').length`, false); n == 0 {
				t.Errorf("%s: %s is not explained on the page", tt.path, term)
				continue
			}
			tip := eval[string](t, ctx, `(e => { e.focus(); return document.activeElement === e ? getComputedStyle(e, '::after').content : 'not focused: ' + (document.activeElement && document.activeElement.outerHTML.slice(0, 80)) })(document.querySelector('`+sel+`'))`, false)
			if !strings.Contains(tip, strings.SplitN(views.Glossary[term], " ", 2)[0]) {
				t.Errorf("%s: tapping %s shows %q", tt.path, term, tip)
			}
		}
	}
}

// The tour: the first page's "Take the tour" steps the first token
// through its stages on its own, each with its sentence in a caption;
// a key stops it and stepping by hand goes on.
func TestTour(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="tour"]`)))
	click(t, ctx, `[data-testid="tour"]`)
	caption := `(c => c ? c.textContent : "")(document.querySelector('[data-testid="tour-caption"]'))`
	waitJS(t, ctx, "the tour's caption", `document.querySelector('[data-testid="tour-caption"]') !== null`)
	if c := eval[string](t, ctx, caption, false); !strings.Contains(c, "tokenize") || !strings.Contains(c, views.Glossary["token"]) {
		t.Errorf("the first caption: %q", c)
	}
	screenshot(t, ctx, "tour-start")
	waitJS(t, ctx, "the tour to step to embed", `document.querySelector('[data-current-stage]').dataset.currentStage === "embed"`)
	if c := eval[string](t, ctx, caption, false); !strings.Contains(c, views.Glossary["embedding"]) {
		t.Errorf("the embed caption: %q", c)
	}
	do(t, ctx, chromedp.KeyEvent("x"))
	waitJS(t, ctx, "the tour to stop on a key", `document.querySelector('[data-testid="tour-caption"]').textContent.includes("stopped")`)
	before := attr(t, ctx, "[data-current-stage]", "data-current-stage")
	click(t, ctx, `#action-step`)
	waitChange(t, ctx, "[data-current-stage]", "data-current-stage", before)
}

// On a phone with a run open the stage comes first and the prompt form
// follows it, a link at the top leading there; before a run the form and
// the examples lead.
func TestPhoneShowsTheStageFirst(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	top := func(sel string) float64 {
		return eval[float64](t, ctx, `document.querySelector('`+sel+`').getBoundingClientRect().top + scrollY`, false)
	}
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/?prompt=Once+upon+a+time&max_tokens=4&seed=3"),
		chromedp.WaitVisible(chromedp.CSS(`[data-current-stage]`)))
	if strip, form := top(`[data-current-stage]`), top(`form.settings`); strip > 844 || form < strip {
		t.Errorf("a phone: the stage strip at %.0f px, the form at %.0f: want the stage on the first screen, before the form", strip, form)
	}
	if !eval[bool](t, ctx, `document.querySelector('[data-testid="to-prompt"]').offsetHeight > 0`, false) {
		t.Error("no link to the prompt on a phone")
	}
	screenshot(t, ctx, "explorer-phone-stage-first")
	do(t, ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="start-here"]`)))
	if form, start := top(`form.settings`), top(`[data-testid="start-here"]`); form > start {
		t.Errorf("before a run the form (%.0f px) should lead the examples (%.0f)", form, start)
	}
	do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/?prompt=Once+upon+a+time&max_tokens=4&seed=3"),
		chromedp.WaitVisible(chromedp.CSS(`[data-current-stage]`)))
	if eval[bool](t, ctx, `document.querySelector('[data-testid="to-prompt"]').offsetHeight > 0`, false) {
		t.Error("the phone's prompt link shows on a laptop, where the form is beside the stage")
	}
}

// Compare's form says what it is doing while a slow comparison runs (a
// real model's lanes take seconds each), in its status line; back at
// the form, the line is empty again.
func TestCompareSaysItIsBusy(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/compare"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="busy-note"]`)))
	if s := eval[string](t, ctx, `document.querySelector('[data-testid="busy-note"]').textContent`, false); s != "" {
		t.Fatalf("the status line says %q before any comparison", s)
	}
	// the submit as the button sends it, the page kept (the request is not the point)
	said := eval[string](t, ctx, `(() => { const f = document.querySelector('form[data-busy]'); f.addEventListener('submit', e => e.preventDefault()); f.requestSubmit(); return f.getAttribute('aria-busy') + ': ' + document.querySelector('[data-testid="busy-note"]').textContent; })()`, false)
	if !strings.HasPrefix(said, "true: Comparing") {
		t.Errorf("while comparing, the form says %q", said)
	}
}

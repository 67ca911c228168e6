package server

import (
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"
)

// wcagTextSpacing is WCAG 1.4.12's spacing: line height 1.5 × the font
// size, paragraphs 2 ×, letters 0.12 ×, words 0.16 × — applied to every
// element, as a user's style sheet or bookmarklet does.
const wcagTextSpacing = `(() => { const s = document.createElement('style'); s.id = 'wcag-spacing';
  s.textContent = '* { line-height: 1.5 !important; letter-spacing: 0.12em !important; word-spacing: 0.16em !important; } p { margin-bottom: 2em !important; }';
  document.head.append(s); return true; })()`

// clippedText lists elements that hide part of their own text after the
// spacing: overflow hidden or clipped, and content taller or wider than
// the box (scrolling boxes are fine: their content stays reachable).
const clippedText = `[...document.querySelectorAll('main *, header *')].filter(e => {
  const cs = getComputedStyle(e);
  if (!['hidden', 'clip'].includes(cs.overflowX) && !['hidden', 'clip'].includes(cs.overflowY)) return false;
  if (e.closest('[hidden], details:not([open]) > :not(summary)') || cs.display === 'none' || cs.visibility === 'hidden') return false;
  if (!e.textContent.trim() || e.matches('canvas, svg, svg *, input, select, textarea, progress, .sr-only, .visually-hidden')) return false;
  const r = e.getBoundingClientRect(); if (r.width < 2 || r.height < 2) return false; // visually-hidden text is meant to be clipped
  return e.scrollHeight > e.clientHeight + 2 || e.scrollWidth > e.clientWidth + 2;
}).slice(0, 6).map(e => e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).split(' ').join('.') : '') + ': ' + e.textContent.trim().slice(0, 40))`

// WCAG 1.4.12 and 1.4.10: with WCAG's text spacing no page clips text,
// and at 320 CSS px (1280 px at 400 % zoom) no page scrolls sideways
// (tables and charts scroll inside their own regions).
func TestTextSpacingAndReflow(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	q := "/?prompt=" + url.QueryEscape("Once upon a time") + "&max_tokens=4&seed=3"
	pages := []string{q, q + "&stage=attention&layer=2", q + "&stage=softmax", q + "&stage=sampler&filter=2", q + "&stage=kv",
		q + "&stage=embed", q + "&stage=mlp&layer=1", "/lessons", "/lessons/what-is-inference", "/classroom", "/compare", "/families",
		"/memory", "/serving", "/quantization", "/requests", "/patching", "/agent"}
	for _, size := range []screenSize{{"320", 320, 256}, {"laptop", 1280, 800}} {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h))
		for _, p := range pages {
			do(t, ctx, chromedp.Navigate(base+p), chromedp.WaitReady(chromedp.CSS(`main`)))
			eval[bool](t, ctx, wcagTextSpacing, false)
			if bad := eval[[]string](t, ctx, clippedText, false); len(bad) > 0 {
				t.Errorf("%s at %s px with WCAG text spacing clips text: %v", p, size.name, bad)
			}
			fits(t, ctx, int(size.w), p+" at "+size.name+" with WCAG text spacing")
		}
		screenshot(t, ctx, "text-spacing-"+size.name)
	}
}

package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// The model map in a real browser: a part per layer's attention and MLP
// (as many as the engine's stages), the current stage lit, clicks and the
// keyboard on the map and on the pipeline chips going to that stage, no
// generated token before its draw, the flow drawn only with motion
// allowed, and the map collapsed on a phone with nothing overflowing.
func TestModelMapInBrowser(t *testing.T) {
	ctx, base := browser(t)
	do(t, ctx, chromedp.EmulateViewport(1280, 720),
		chromedp.Navigate(base+"/?prompt=Once+upon+a+time&seed=3&temperature=0.8"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="model-map"] svg`)))
	attn := eval[int](t, ctx, `document.querySelectorAll('[data-testid^="map-attention-"]').length`, false)
	chips := eval[int](t, ctx, `document.querySelectorAll('.strip button[data-goto-stage="attention"]').length`, false)
	if attn == 0 || attn != chips || eval[int](t, ctx, `document.querySelectorAll('[data-testid^="map-mlp-"]').length`, false) != chips {
		t.Errorf("map: %d attention parts, the engine's step has %d attention stages", attn, chips)
	}
	for _, id := range []string{"map-tokenize", "map-embed", "map-norm", "map-logits", "map-softmax", "map-sampler-1", "map-sample", "map-kv", "map-stream"} {
		if eval[int](t, ctx, `document.querySelectorAll('[data-testid="`+id+`"]').length`, false) != 1 {
			t.Errorf("no %s", id)
		}
	}
	if c := attr(t, ctx, `[data-testid="map-tokenize"]`, "class"); !strings.Contains(c, "here") {
		t.Errorf("tokenize part %q: not lit at the first stage", c)
	}
	screenshot(t, ctx, "map-tokenize")
	// a click on a part goes to its stage
	click(t, ctx, `[data-testid="map-mlp-2"]`)
	waitChange(t, ctx, "[data-current-stage]", "data-current-stage", "tokenize")
	if s, l := attr(t, ctx, "[data-current-stage]", "data-current-stage"), attr(t, ctx, "[data-current-stage]", "data-layer"); s != "mlp" || l != "1" {
		t.Errorf("clicked layer 2's MLP, at %s layer %s", s, l)
	}
	if c := attr(t, ctx, `[data-testid="map-mlp-2"]`, "class"); !strings.Contains(c, "here") {
		t.Errorf("mlp-2 part %q: not lit", c)
	}
	if w := eval[string](t, ctx, `document.querySelector('[data-testid="map-where"]').textContent`, false); !strings.HasPrefix(w, "layer 2 of") {
		t.Errorf("map says %q", w)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="generated-token"]').length`, false); n != 0 {
		t.Errorf("%d generated tokens shown before the first draw", n)
	}
	if a := eval[string](t, ctx, `getComputedStyle(document.querySelector('[data-testid="map-flow"]')).animationName`, false); a != "map-flow" {
		t.Errorf("flow animation %q with motion allowed", a)
	}
	screenshot(t, ctx, "map-mlp")
	// a pipeline chip, then the keyboard on a map part
	click(t, ctx, `.strip button[data-goto-stage="softmax"]`)
	waitChange(t, ctx, "[data-current-stage]", "data-current-stage", "mlp")
	if s := attr(t, ctx, "[data-current-stage]", "data-current-stage"); s != "softmax" {
		t.Errorf("clicked the softmax chip, at %s", s)
	}
	// within a token step the page gets only the map's state: the lit part
	// moves all the same
	waitFor(t, ctx, `document.querySelector('[data-testid="map-softmax"]').classList.contains('here')`)
	if c, m := attr(t, ctx, `[data-testid="map-softmax"]`, "class"), attr(t, ctx, `[data-testid="map-mlp-2"]`, "class"); !strings.Contains(c, "here") || strings.Contains(m, "here") || !strings.Contains(m, "done") {
		t.Errorf("after the softmax chip: softmax part %q, mlp-2 part %q", c, m)
	}
	if w := eval[string](t, ctx, `document.querySelector('[data-testid="map-where"]').textContent`, false); w != "softmax" {
		t.Errorf("map says %q at softmax", w)
	}
	eval[any](t, ctx, `(() => { const k = document.querySelector('[data-testid="map-kv"]'); k.focus(); k.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true})); return null; })()`, false)
	waitChange(t, ctx, "[data-current-stage]", "data-current-stage", "softmax")
	if s := attr(t, ctx, "[data-current-stage]", "data-current-stage"); s != "kv" {
		t.Errorf("Enter on the KV part, at %s", s)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="generated-token"]').length`, false); n != 1 {
		t.Errorf("%d generated tokens shown after the draw, want 1", n)
	}
	// the KV table on a decode step: one row appended, the rest read
	eval[any](t, ctx, `document.dispatchEvent(new KeyboardEvent('keydown', {key: 'n', bubbles: true}))`, false)
	waitChange(t, ctx, "[data-current-stage]", "data-current-stage", "kv")
	click(t, ctx, `[data-testid="map-kv"]`)
	waitChange(t, ctx, "[data-current-stage]", "data-current-stage", "embed")
	if ids := eval[string](t, ctx, `document.querySelector('[data-testid="model-map"] [data-tpl="token ids: {T}"]').textContent`, false); ids != "token ids: 1" {
		t.Errorf("the map's numbers on a decode step: %q, want token ids: 1", ids)
	}
	kv := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="kv-row"]')].map(r => r.dataset.pos + ':' + r.dataset.new)`, false)
	if len(kv) < 2 || kv[len(kv)-1] != fmt.Sprintf("%d:true", len(kv)-1) || strings.Count(strings.Join(kv, " "), "true") != 1 {
		t.Errorf("KV table on a decode step: %v, want one new row, the last", kv)
	}
	screenshot(t, ctx, "kv-table")
	// reduced motion: no flow animation
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}}})
		return err
	}))
	click(t, ctx, `[data-testid="map-logits"]`)
	waitChange(t, ctx, "[data-current-stage]", "data-current-stage", "kv")
	if a := eval[string](t, ctx, `getComputedStyle(document.querySelector('[data-testid="map-flow"]')).animationName`, false); a != "none" {
		t.Errorf("flow animation %q under reduced motion", a)
	}
	// a phone: the map is one line until opened, nothing overflows
	eval[any](t, ctx, `localStorage.removeItem("stepthrough-map")`, false)
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Reload(),
		chromedp.WaitReady(chromedp.CSS(`[data-testid="model-map"]`)))
	if open := eval[bool](t, ctx, `document.querySelector('[data-testid="model-map"]').open`, false); open {
		t.Error("the map is open on a phone")
	}
	fits(t, ctx, 390, "the Explorer")
	screenshot(t, ctx, "map-phone")
	// every stage's picture fits the phone
	for _, stage := range []string{"tokenize", "embed", "attention", "mlp", "logits", "softmax", "sampler", "sample", "kv"} {
		before := attr(t, ctx, "[data-current-stage]", "data-current-stage")
		if eval[int](t, ctx, `document.querySelectorAll('.strip button[data-goto-stage="`+stage+`"]').length`, false) == 0 {
			continue // not a stage of this token step
		}
		if before != stage {
			click(t, ctx, `.strip button[data-goto-stage="`+stage+`"]`)
			waitChange(t, ctx, "[data-current-stage]", "data-current-stage", before)
		}
		fits(t, ctx, 390, stage)
	}
	click(t, ctx, `[data-testid="model-map"] summary`)
	do(t, ctx, chromedp.Reload(), chromedp.WaitReady(chromedp.CSS(`[data-testid="model-map"]`)))
	if open := eval[bool](t, ctx, `document.querySelector('[data-testid="model-map"]').open`, false); !open {
		t.Error("opening the map on a phone did not outlive a reload")
	}
}

// waitFor polls a JavaScript condition until it holds (20 s at most).
func waitFor(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err == nil && ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("never true: %s", js)
}

// The projector theme persists across pages and reloads, and enlarges
// the text.
func TestProjectorThemePersists(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	do(t, ctx, chromedp.EmulateViewport(1280, 720), chromedp.Navigate(base+"/?prompt=She+was+very&model=lesson.gguf&seed=3"),
		chromedp.WaitVisible(chromedp.CSS(`[data-stage="tokenize"]`)))
	size := func() string { return eval[string](t, ctx, `getComputedStyle(document.body).fontSize`, false) }
	plain := size()
	click(t, ctx, `[data-action="theme"]`)
	big := size()
	for _, path := range []string{"/lessons", "/compare", "/?prompt=She+was+very&model=lesson.gguf&seed=3"} {
		do(t, ctx, chromedp.Navigate(base+path), chromedp.WaitReady(chromedp.CSS(`body`)))
		if th := eval[string](t, ctx, `document.documentElement.dataset.theme || ""`, false); th != "projector" || size() != big {
			t.Errorf("%s: theme %q, text %s (projector text %s)", path, th, size(), big)
		}
	}
	if big == plain {
		t.Errorf("the projector theme keeps the text at %s", plain)
	}
	// the projector's map at 720 and 1080 px high: no label runs into
	// another, the chain's slanted names are not drawn past their slots,
	// no text is cut by the drawing's edge, and on the taller screen the
	// drawing takes most of the width (it was capped to 9rem high: 70 %)
	for _, size := range []screenSize{{"720p", 1280, 720}, {"1080p", 1920, 1080}} {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(base+"/?prompt=She+was+very&model=lesson.gguf&seed=3"),
			chromedp.WaitVisible(chromedp.CSS(`details.map[open] svg`)))
		if o := eval[[]string](t, ctx, overlapsJS(`details.map svg text:not(.tag)`), false); len(o) > 0 {
			t.Errorf("%s: the map's labels overlap: %q", size.name, o)
		}
		tags := eval[[]float64](t, ctx, `[...document.querySelectorAll('details.map svg text.tag')].map(e => parseFloat(getComputedStyle(e).fontSize))`, false)
		if len(tags) == 0 || slices.Max(tags) > 13 {
			t.Errorf("%s: the chain's names are drawn at %v px in the drawing's units (13 fits their slots)", size.name, tags)
		}
		cut := eval[[]string](t, ctx, `(() => { const s = document.querySelector('details.map svg').getBoundingClientRect();
			return [...document.querySelectorAll('details.map svg text')].filter(e => e.textContent.trim()).filter(e => { const r = e.getBoundingClientRect(); return r.top < s.top - 0.5 || r.left < s.left - 0.5 || r.right > s.right + 0.5; }).map(e => e.textContent.trim()); })()`, false)
		if len(cut) > 0 {
			t.Errorf("%s: texts cut by the drawing's edge: %q", size.name, cut)
		}
		if w := eval[float64](t, ctx, `document.querySelector('details.map svg').getBoundingClientRect().width / document.querySelector('details.map').clientWidth`, false); size.h >= 1080 && w < 0.85 {
			t.Errorf("%s: the map is drawn %.0f %% of its box's width", size.name, 100*w)
		}
		viewShot(t, ctx, `details.map`, "projector-map-"+size.name)
	}
	eval[any](t, ctx, `localStorage.removeItem("stepthrough-theme")`, false)
}

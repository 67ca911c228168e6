package server

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"stepthrough/classroom"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// Layout checks (#61): the tour keeps each stage in view, the first
// screen's settings, small screens and big models, and an intervention
// made from a panel kept by the settings form.

// viewShot saves what the viewport shows (screenshot saves the whole
// page), after scrolling sel into view when sel is not "".
func viewShot(t *testing.T, ctx context.Context, sel, name string) {
	t.Helper()
	if sel != "" {
		eval[any](t, ctx, fmt.Sprintf(`(e => { if (e) e.scrollIntoView({block: "start"}); return null; })(document.querySelector(%q))`, sel), false)
	}
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("STEPTHROUGH_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	p := filepath.Join(dir, name+".png")
	os.WriteFile(p, buf, 0o644)
	t.Logf("screenshot %s", p)
}

// seenJS says why the element sel is not seen whole ("" when it is): out
// of the viewport, or covered (another element is drawn at its points:
// the tour's caption, the sticky model map).
func seenJS(sel string) string {
	return fmt.Sprintf(`(h => { if (!h) return "no " + %[1]q;
		const r = h.getBoundingClientRect();
		if (r.top < 0 || r.bottom > innerHeight) return "outside the viewport: top " + Math.round(r.top) + ", bottom " + Math.round(r.bottom) + " of " + innerHeight;
		for (const [x, y] of [[r.left + 4, r.top + 2], [r.left + Math.min(r.width, 300) / 2, r.top + r.height / 2], [r.left + 4, r.bottom - 2]]) {
			const e = document.elementFromPoint(x, y);
			if (!e || !(e === h || h.contains(e))) return "covered at (" + Math.round(x) + ", " + Math.round(y) + ") by " + (e ? e.tagName + "." + e.className : "nothing");
		}
		return ""; })(document.querySelector(%[1]q))`, sel)
}

const panelHeading = `#stage section.panel[data-stage] h2`

// scrollSettledJS resolves once the page has not scrolled for six frames
// (a smooth scroll has ended).
const scrollSettledJS = `new Promise(r => { let last = -1, same = 0; const f = () => { if (scrollY === last) { if (++same > 5) { r(true); return; } } else { same = 0; last = scrollY; } requestAnimationFrame(f); }; f(); })`

// The tour at 1280×800: each stage's panel is scrolled into view, its
// heading on screen and covered neither by the caption nor by the model
// map; the Advanced settings stay folded; with reduced motion the
// scroll is immediate.
func TestTourKeepsEachStageInView(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="tour"]`)))
	tourURL := base + attr(t, ctx, `[data-testid="tour"]`, "href")
	click(t, ctx, `[data-testid="tour"]`)
	waitJS(t, ctx, "the tour's caption", `document.querySelector('[data-testid="tour-caption"]') !== null`)
	if eval[bool](t, ctx, `document.querySelector('[data-testid="advanced"]').open`, false) {
		t.Error("the Advanced settings are open beside the tour")
	}
	const over = `document.querySelector('[data-testid="tour-caption"]').textContent.includes("has been through every stage")`
	seen := map[string]bool{}
	for i := 0; i < 40 && !eval[bool](t, ctx, over, false); i++ {
		stage := attr(t, ctx, "#state", "data-stage-label")
		waitJS(t, ctx, "the tour to show "+stage, `!(`+seenJS(panelHeading)+`)`)
		eval[bool](t, ctx, scrollSettledJS, true)
		if why := eval[string](t, ctx, seenJS(panelHeading), false); why != "" {
			t.Errorf("tour stage %s: the panel's heading is %s", stage, why)
		}
		// the picture is on screen: the panel starts high up, or all of it is above the caption
		if at := eval[[]float64](t, ctx, `[document.querySelector('`+panelHeading+`').getBoundingClientRect().top, document.querySelector('#stage section.panel[data-stage]').getBoundingClientRect().bottom, document.querySelector('[data-testid="tour-caption"]').getBoundingClientRect().top]`, false); at[0] > 400 && at[1] > at[2] {
			t.Errorf("tour stage %s: the panel's heading is %.0f px down an 800 px screen, its end %.0f under the caption (%.0f): its picture below the fold", stage, at[0], at[1], at[2])
		}
		seen[stage] = true
		if stage == "L2 attn" || stage == "top-p" || stage == "tokenize" {
			viewShot(t, ctx, "", "tour-"+strings.ReplaceAll(stage, " ", "-"))
		}
		url := attr(t, ctx, "#state", "data-url")
		eval[any](t, ctx, `document.getElementById("action-step").click()`, false) // as the tour's timer steps
		waitChange(t, ctx, "#state", "data-url", url)
	}
	if len(seen) < 18 { // the tour's own timer steps too, now and then past one
		t.Errorf("the tour showed %d stages in view: %v", len(seen), seen)
	}
	if eval[bool](t, ctx, `document.querySelector('[data-testid="advanced"]').open`, false) {
		t.Error("the Advanced settings opened during the tour")
	}

	// reduced motion: the panel is in place in the frame after the redraw
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}}})
		return err
	}), chromedp.Navigate(tourURL), chromedp.WaitVisible(chromedp.CSS(`[data-testid="tour-caption"]`)))
	for range 3 {
		url := attr(t, ctx, "#state", "data-url")
		stage := eval[string](t, ctx, `new Promise(r => { const s = document.getElementById("state").dataset.url;
			document.addEventListener("htmx:wsAfterMessage", () => requestAnimationFrame(() => requestAnimationFrame(() => r(document.getElementById("state").dataset.stageLabel + ": " + (`+seenJS(panelHeading)+`)))), {once: true});
			document.getElementById("action-step").click(); })`, true)
		if !strings.HasSuffix(stage, ": ") {
			t.Errorf("reduced motion, two frames after the redraw of %s", stage)
		}
		waitChange(t, ctx, "#state", "data-url", url)
	}
}

// formControls lists the settings form's controls on screen (name, or
// the button's action).
const formControlsJS = `[...document.querySelectorAll('form.settings :is(textarea, input, select, button)')].filter(e => e.checkVisibility()).map(e => e.name || e.dataset.action)`

// The Explorer's first screen, before a run and with one, at a laptop's,
// a projector's and a phone's size: the prompt, model, temperature, max
// tokens and Run, the Advanced settings folded until opened.
func TestFirstScreenShowsTheEssentials(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	want := "prompt model temperature max_tokens run"
	for _, size := range []screenSize{{"laptop", 1280, 800}, {"projector", 1920, 1080}, {"phone", 390, 844}} {
		for _, path := range []string{"/", "/?prompt=Once+upon+a+time&max_tokens=4&seed=3&stage=sampler&filter=2"} {
			do(t, ctx, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(base+path), chromedp.WaitVisible(chromedp.CSS(`#prompt`)))
			if got := strings.Join(eval[[]string](t, ctx, formControlsJS, false), " "); got != want {
				t.Errorf("%s %s: the form shows %q, want %q", size.name, path, got, want)
			}
			if eval[bool](t, ctx, `document.querySelector('[data-testid="advanced"]').open`, false) {
				t.Errorf("%s %s: the Advanced settings are open", size.name, path)
			}
		}
	}
	do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`#h-start`)))
	if why := eval[string](t, ctx, seenJS(`#h-start`), false); why != "" {
		t.Errorf("laptop: Start here is %s", why)
	}
	viewShot(t, ctx, "", "first-screen-laptop")
	click(t, ctx, `[data-testid="advanced"] summary`)
	if n := len(eval[[]string](t, ctx, formControlsJS, false)); n < 20 {
		t.Errorf("opened, the Advanced settings show %d controls in all", n)
	}
}

// heatmapLabelPx is the size the heatmap's 12 px labels are drawn at on
// screen.
const heatmapLabelPx = `(c => 12 * c.getBoundingClientRect().width / (c.width / 2))(document.querySelector('canvas.heat[data-painted]'))`

// A 34-token prompt's attention on a phone: the heatmap's labels stay 12
// px or larger, and the heatmap scrolls sideways inside a focusable,
// named region instead of shrinking.
func TestHeatmapOnAPhoneWithALongPrompt(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	prompt := "Once upon a time, there was a little girl named Lily. She loved to play in the park with her dog and her friend Tom."
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/?"+url.Values{"prompt": {prompt}, "max_tokens": {"2"}, "seed": {"3"}, "stage": {"attention"}, "layer": {"2"}}.Encode()),
		chromedp.WaitVisible(chromedp.CSS(`canvas.heat[data-painted]`)))
	if n := eval[int](t, ctx, `JSON.parse(document.querySelector('canvas.heat').dataset.qlabels).length`, false); n != 35 {
		t.Fatalf("the prompt is %d tokens with BOS, want 34 and BOS", n)
	}
	if px := eval[float64](t, ctx, heatmapLabelPx, false); px < 12-0.01 {
		t.Errorf("the heatmap's labels are %.1f px on a phone, want 12 or more", px)
	}
	region := eval[[]string](t, ctx, `(s => [String(s.scrollWidth > s.clientWidth), s.getAttribute("tabindex") || "", s.getAttribute("aria-label") || ""])(document.querySelector('canvas.heat').closest('.scroll'))`, false)
	if region[0] != "true" || region[1] != "0" || region[2] == "" {
		t.Errorf("the heatmap's region (scrolls, tabindex, name): %v", region)
	}
	fits(t, ctx, 390, "the page")
	viewShot(t, ctx, `canvas.heat`, "heatmap-34-tokens-phone")
}

// /patching on a phone: the grid scrolls inside a focusable, named
// region whose layer column stays in view, and every position's column
// can be brought on screen.
func TestPatchingGridOnAPhone(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/patching"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="patch-grid"]`)))
	const region = `document.querySelector('[data-testid="patch-grid"]').closest('.scroll')`
	attrs := eval[[]string](t, ctx, `(s => [s.getAttribute("tabindex") || "", s.getAttribute("role") || "", s.getAttribute("aria-label") || ""])(`+region+`)`, false)
	if attrs[0] != "0" || attrs[1] != "region" || attrs[2] == "" {
		t.Errorf("the grid's region (tabindex, role, name): %v", attrs)
	}
	// the columns in view: whole inside the region
	inView := `(s => { const b = s.getBoundingClientRect(); return [...document.querySelectorAll('[data-testid="patch-row"]:last-child td')].filter(c => { const r = c.getBoundingClientRect(); return r.left >= b.left - 1 && r.right <= b.right + 1; }).map(c => c.textContent); })(` + region + `)`
	first := eval[[]string](t, ctx, inView, false)
	t.Logf("the last layer's cells on the first view: %v", first)
	if !slices.ContainsFunc(first, func(c string) bool { return c != "0%" }) {
		t.Errorf("the first view shows the last layer's cells %q: only 0%% columns", first)
	}
	viewShot(t, ctx, `[data-testid="patch-grid"]`, "patching-phone")
	eval[any](t, ctx, `(s => { s.scrollLeft = 0; return null; })(`+region+`)`, false)
	start := eval[[]string](t, ctx, inView, false)
	eval[any](t, ctx, `(s => { s.scrollLeft = s.scrollWidth; return null; })(`+region+`)`, false)
	last := eval[[]string](t, ctx, inView, false)
	all := eval[int](t, ctx, `document.querySelectorAll('[data-testid="patch-row"]:last-child td').length`, false)
	if len(start)+len(last) < all || len(last) == 0 {
		t.Errorf("of %d columns, %d show scrolled to the start and %d to the end", all, len(start), len(last))
	}
	if why := eval[string](t, ctx, seenJS(`[data-testid="patch-row"]:last-child th`), false); why != "" {
		t.Errorf("scrolled to the end, the layer's label is %s", why)
	}
	viewShot(t, ctx, "", "patching-phone-scrolled")
	fits(t, ctx, 390, "the page")
}

// clippedJS lists the cells under sel whose text is cut: wider than the
// cell, or past the right of the viewport or of a scrolling box around it.
func clippedJS(sel string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%q)].filter(c => {
		const r = c.getBoundingClientRect(); const s = c.closest('.scroll'); const right = Math.min(innerWidth, s ? s.getBoundingClientRect().right : innerWidth);
		return c.scrollWidth > c.clientWidth + 1 || r.right > right + 1; }).map(c => c.textContent.trim().slice(0, 30))`, sel)
}

// /quantization on a phone: the summary's every cell is whole on
// screen ("never" included), each value beside its column's name.
func TestQuantizationSummaryOnAPhone(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/quantization"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="quant-summary"]`)))
	if cut := eval[[]string](t, ctx, clippedJS(`[data-testid="quant-summary"] td`), false); len(cut) > 0 {
		t.Errorf("cells cut on a phone: %q", cut)
	}
	if n := eval[int](t, ctx, `[...document.querySelectorAll('[data-testid="quant-summary"] td')].filter(c => c.textContent.trim() === "never" || c.textContent.includes("never")).length`, false); n == 0 {
		t.Error("no precision's text never diverges: the check has nothing to look at")
	}
	fits(t, ctx, 390, "the page")
	viewShot(t, ctx, `[data-testid="quant-summary"]`, "quantization-phone")
}

// revealedRoom starts a room on logits-and-softmax at its question, one
// student's answer in and revealed; it returns the room's code.
func revealedRoom(t *testing.T, base string) string {
	t.Helper()
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
	return code
}

// A revealed poll on a phone: the "engine's answer" badge is one box,
// whole inside its cell and the screen.
func TestRevealedPollOnAPhone(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels(), Limits: classroom.Limits{StudentsPerAddress: 300}})
	code := revealedRoom(t, base)
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/rooms/"+code), chromedp.WaitVisible(chromedp.CSS(`[data-testid="poll-result"] .chip`)))
	box := eval[[]float64](t, ctx, `(c => { const r = c.getBoundingClientRect(), d = c.closest('td').getBoundingClientRect(); return [c.getClientRects().length, r.left - d.left, d.right - r.right, innerWidth - r.right]; })(document.querySelector('[data-testid="poll-result"] .chip'))`, false)
	if box[0] != 1 || box[1] < 0 || box[2] < 0 || box[3] < 0 {
		t.Errorf("the engine's answer badge: %v boxes, %.0f px in from its cell's left, %.0f from its right, %.0f from the screen's", box[0], box[1], box[2], box[3])
	}
	viewShot(t, ctx, `[data-testid="reveal"]`, "poll-revealed-phone")
}

// deepWideModel is a random-weight model of a big model's shape where it
// matters to a page: 28 layers and Qwen's 151,936-token vocabulary.
func deepWideModel(t *testing.T) string {
	return synthDir(t, "deep-wide", model.SynthOptions{Arch: "qwen2", Embd: 64, Layers: 28, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 151936, Context: 512, Tied: true, Type: quant.F32, Seed: 1})
}

// overlapsJS lists the pairs of texts under sel whose boxes overlap.
func overlapsJS(sel string) string {
	return fmt.Sprintf(`(() => { const ts = [...document.querySelectorAll(%q)].filter(e => e.textContent.trim() && e.getClientRects().length);
		const out = [];
		ts.forEach((a, i) => ts.slice(i + 1).forEach(b => { const p = a.getBoundingClientRect(), q = b.getBoundingClientRect();
			if (Math.min(p.right, q.right) - Math.max(p.left, q.left) > 1 && Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top) > 1) out.push(a.textContent.trim() + " / " + b.textContent.trim()); }));
		return out; })()`, sel)
}

// A 28-layer model with a 151,936-token vocabulary: the model map's
// labels do not run into each other, and on a phone the stage strip is
// one row that scrolls, with the current stage's chip in view.
func TestDeepWideModelOnAPhone(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: synthesizes a 40 MB model")
	}
	ctx, base, _ := browserServer(t, Config{ModelsDirs: []string{deepWideModel(t)}})
	run := "/?" + url.Values{"model": {"deep-wide.gguf"}, "prompt": {"Once upon a time"}, "max_tokens": {"2"}, "seed": {"1"}}.Encode()
	for _, size := range []screenSize{{"laptop", 1280, 800}, {"projector", 1920, 1080}} {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(base+run+"&stage=sampler&filter=2"), chromedp.WaitVisible(chromedp.CSS(`details.map[open] svg`)))
		if o := eval[[]string](t, ctx, overlapsJS(`details.map svg text:not(.tag)`), false); len(o) > 0 { // the sampler's tags are slanted: their boxes are not their ink
			t.Errorf("%s: the map's labels overlap: %q", size.name, o)
		}
		viewShot(t, ctx, `details.map`, "deep-wide-map-"+size.name)
	}
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+run+"&stage=mlp&layer=20"), chromedp.WaitVisible(chromedp.CSS(`[data-current-stage]`)))
	strip := `document.querySelector('.strip[data-current-stage]')`
	for i := range 3 {
		if i > 0 {
			url := attr(t, ctx, "#state", "data-url")
			click(t, ctx, `#action-step`)
			waitChange(t, ctx, "#state", "data-url", url)
		}
		got := eval[[]float64](t, ctx, `(s => { const b = s.querySelector('button'), c = s.querySelector('[aria-current="step"]').getBoundingClientRect(), r = s.getBoundingClientRect();
			return [s.querySelectorAll('button').length, r.height, b.getBoundingClientRect().height, s.scrollWidth - s.clientWidth, c.left - r.left, r.right - c.right, r.bottom]; })(`+strip+`)`, false)
		stage := attr(t, ctx, "#state", "data-stage-label")
		if got[0] < 60 || got[1] > 2*got[2]+4 || got[3] <= 0 {
			t.Errorf("%s: the strip of %.0f chips is %.0f px high (a chip %.0f), scrolling %.0f px: want one scrolling row", stage, got[0], got[1], got[2], got[3])
		}
		if got[4] < 0 || got[5] < 0 {
			t.Errorf("%s: the current chip is %.0f px from the strip's left and %.0f from its right: want it in view", stage, got[4], got[5])
		}
		if h := eval[float64](t, ctx, `document.querySelector('`+panelHeading+`').getBoundingClientRect().bottom`, false); h > 844 {
			t.Errorf("%s: the strip ends %.0f px down, the stage's heading %.0f: want the heading on the first screen (844 px)", stage, got[6], h)
		}
	}
	viewShot(t, ctx, "", "deep-wide-phone")
	fits(t, ctx, 390, "the page")
}

// The embedding map (PCA) on a phone and a laptop: no label covers
// another or another token's point, and every label is inside the map.
func TestEmbeddingMapLabelsDoNotPileUp(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	path := "/?" + url.Values{"prompt": {"The little dog ran to the park and the cat sat"}, "max_tokens": {"4"}, "seed": {"3"}, "stage": {"embed"}}.Encode()
	for _, size := range []screenSize{{"phone", 390, 844}, {"laptop", 1280, 800}} {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(base+path), chromedp.WaitVisible(chromedp.CSS(`[data-testid="vocab-map"]`)))
		if o := eval[[]string](t, ctx, overlapsJS(`[data-testid="vocab-map"] text`), false); len(o) > 0 {
			t.Errorf("%s: labels overlap: %q", size.name, o)
		}
		bad := eval[[]string](t, ctx, `(() => { const svg = document.querySelector('[data-testid="vocab-map"]').getBoundingClientRect(), out = [];
			const gs = [...document.querySelectorAll('[data-testid="vocab-point"]')];
			gs.forEach(g => { const t = g.querySelector('text'); if (!t) return; const r = t.getBoundingClientRect();
				if (r.left < svg.left - 1 || r.right > svg.right + 1 || r.top < svg.top - 1 || r.bottom > svg.bottom + 1) out.push(t.textContent + " outside the map");
				gs.forEach(h => { if (h === g) return; const c = h.querySelector('circle').getBoundingClientRect();
					if (Math.min(r.right, c.right) - Math.max(r.left, c.left) > 1 && Math.min(r.bottom, c.bottom) - Math.max(r.top, c.top) > 1) out.push(t.textContent + " over the point of " + h.querySelector('title').textContent); }); });
			return out; })()`, false)
		if len(bad) > 0 {
			t.Errorf("%s: %q", size.name, bad)
		}
		px := eval[float64](t, ctx, `parseFloat(getComputedStyle(document.querySelector('[data-testid="vocab-map"] text')).fontSize) * document.querySelector('[data-testid="vocab-map"]').getBoundingClientRect().width / 2.7`, false)
		if px < 11-0.01 {
			t.Errorf("%s: the labels are %.1f px", size.name, px)
		}
		shown := eval[int](t, ctx, `document.querySelectorAll('[data-testid="vocab-map"] text').length`, false)
		t.Logf("%s: %d labels shown of %d points, %.1f px", size.name, shown, eval[int](t, ctx, `document.querySelectorAll('[data-testid="vocab-point"]').length`, false), px)
		viewShot(t, ctx, `[data-testid="vocab-map"]`, "embedding-map-"+size.name)
	}
}

// The sampler stage at every filter and every step of the samplers
// lesson, answered: none is wider than a phone.
func TestSamplerStagesFitAPhone(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	var paths []string
	for f := 1; f <= 6; f++ {
		paths = append(paths, fmt.Sprintf("/?prompt=Once+upon+a+time&max_tokens=4&seed=3&stage=sampler&filter=%d", f))
	}
	paths = append(paths, "/lessons/samplers/1", "/lessons/samplers/2?answer=3", "/lessons/samplers/3",
		"/lessons/samplers/4?"+url.Values{"answer": {"More tokens, or the same number"}}.Encode())
	for _, p := range paths {
		do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+p), chromedp.WaitReady(chromedp.CSS(`main`)))
		fits(t, ctx, 390, p+": the page")
		if over := eval[int](t, ctx, `Math.max(0, ...[...document.querySelectorAll('table.probs')].map(t => t.getBoundingClientRect().width - t.closest('.scroll').clientWidth))`, false); over > 0 {
			t.Errorf("%s: the sampler's table is %d px wider than its panel on a 390 px phone", p, over)
		}
	}
	viewShot(t, ctx, `table.probs`, "samplers-lesson-phone")
}

// A head switched off from the attention panel: its heatmap says so in
// words, the settings form's field holds it, and Run keeps it; what the
// viewer types in the field is not overwritten by a step; restoring the
// model empties it.
func TestPanelInterventionKeptByRun(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	const field = `document.querySelector('form.settings [name="ablate"]').value`
	do(t, ctx, chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(base+"/?prompt=The+capital+of+France+is&temperature=0&backend=cpu&token=1&stage=attention&layer=2"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="intervene-head"]`)))
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="head-off"]').length`, false); n != 0 {
		t.Errorf("%d switched-off notes before any intervention", n)
	}
	click(t, ctx, `[data-testid="intervene-head"]`)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="head-off"]`)))
	if note := eval[string](t, ctx, `document.querySelector('[data-testid="head-off"]').textContent`, false); !strings.Contains(note, "Head 1 is switched off in this run: its output is zero") {
		t.Errorf("the switched-off head's note: %q", note)
	}
	if name := attr(t, ctx, `canvas.heat`, "aria-label"); !strings.Contains(name, "Head 1 is switched off") {
		t.Errorf("the heatmap's name: %q", name)
	}
	if thumb := eval[string](t, ctx, `document.querySelector('[data-testid="head-thumb"][data-head="0"] small').textContent`, false); thumb != "head 1 (off)" {
		t.Errorf("the head's thumbnail says %q", thumb)
	}
	if v := eval[string](t, ctx, field, false); v != "L2H1" {
		t.Errorf("after switching head 1 of layer 2 off, the form's field holds %q", v)
	}
	viewShot(t, ctx, `[data-testid="head-off"]`, "head-off-note")

	url := attr(t, ctx, "#state", "data-url")
	click(t, ctx, `button[data-action="run"]`)
	waitChange(t, ctx, "#state", "data-url", url)
	if u := attr(t, ctx, "#state", "data-url"); !strings.Contains(u, "ablate=L2H1") {
		t.Errorf("after Run, the run's address %q has no intervention", u)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="edit-effect"]').length`, false); n != 1 {
		t.Errorf("after Run, %d intervention boxes", n)
	}
	url = attr(t, ctx, "#state", "data-url")
	click(t, ctx, `.strip button[data-goto-stage="attention"][data-goto-layer="2"]`)
	waitChange(t, ctx, "#state", "data-url", url)
	if p := attr(t, ctx, `[data-testid="intervene-head"]`, "aria-pressed"); p != "true" {
		t.Errorf("after Run, layer 2's head 1 is not switched off (aria-pressed %s)", p)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="head-off"]').length`, false); n != 1 {
		t.Errorf("after Run, %d switched-off notes on layer 2's head 1", n)
	}

	// typed and not yet run: a step leaves it
	do(t, ctx, chromedp.SetValue(chromedp.CSS(`form.settings [name="ablate"]`), "L1H2"))
	url = attr(t, ctx, "#state", "data-url")
	click(t, ctx, `#action-step`)
	waitChange(t, ctx, "#state", "data-url", url)
	if v := eval[string](t, ctx, field, false); v != "L1H2" {
		t.Errorf("a step replaced what the viewer typed with %q", v)
	}
	click(t, ctx, `[data-testid="edit-clear"]`)
	do(t, ctx, chromedp.WaitNotPresent(chromedp.CSS(`[data-testid="edit-effect"]`)))
	if v := eval[string](t, ctx, field, false); v != "" {
		t.Errorf("after Restore the model, the form's field holds %q", v)
	}
}

package server

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"stepthrough/engine/reftest"
	"stepthrough/static"
)

// browser starts the server on a loopback port and a headless Chromium.
// Without chromium the test skips (fails under REQUIRE_BROWSER=1).
func browser(t *testing.T) (context.Context, string) {
	t.Helper()
	dir := filepath.Dir(reftest.Path(t, "models", "stories260K.gguf"))
	return browserWith(t, Config{ModelsDirs: []string{dir}})
}

// screenSize is a viewport a browser test renders at.
type screenSize struct {
	name string
	w, h int64
}

// phoneAndProjector are the two sizes a class meets: a phone (390 px
// wide) and a projector (1920 × 1080).
var phoneAndProjector = []screenSize{{"phone", 390, 844}, {"projector", 1920, 1080}}

// browserWith is browser over a server built from cfg.
func browserWith(t *testing.T, cfg Config) (context.Context, string) {
	t.Helper()
	ctx, base, _ := browserServer(t, cfg)
	return ctx, base
}

// browserServer is browserWith, also returning the server.
func browserServer(t *testing.T, cfg Config) (context.Context, string, *Server) {
	t.Helper()
	actx := chromeAlloc(t)
	s := mustNew(t, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 300*time.Second) // a guard against a hung browser: the longest test (every page at every size) takes about 120 s on two busy cores
	t.Cleanup(func() { cancelT(); cancelC() })
	return ctx, "http://" + ln.Addr().String(), s
}

// chromeAlloc is the allocator of a headless Chromium; without chromium
// (or the front-end assets) the test skips, or fails under
// REQUIRE_BROWSER=1.
func chromeAlloc(t *testing.T) context.Context {
	t.Helper()
	chrome := "/usr/bin/chromium"
	if _, err := exec.LookPath(chrome); err != nil {
		if os.Getenv("REQUIRE_BROWSER") == "1" {
			t.Fatalf("REQUIRE_BROWSER=1: %s not installed", chrome)
		}
		t.Skipf("no browser: %s not installed (apt-get install chromium)", chrome)
	}
	if msg := static.Missing(); msg != "" {
		if os.Getenv("REQUIRE_BROWSER") == "1" {
			t.Fatalf("REQUIRE_BROWSER=1: %s", msg)
		}
		t.Skip(msg)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.WindowSize(1280, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	return actx
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// pageWidth is the page's scroll width in CSS pixels: wider than the
// viewport means the page scrolls sideways (WCAG's reflow).
func pageWidth(t *testing.T, ctx context.Context) int {
	t.Helper()
	return eval[int](t, ctx, `document.documentElement.scrollWidth`, false)
}

// fits fails t when the page scrolls sideways in a viewport width px
// wide (2 px of rounding allowed): what names the page and its state, and
// the message lists the elements that stick out furthest (fixed ones
// aside).
func fits(t *testing.T, ctx context.Context, width int, what string) {
	t.Helper()
	w := pageWidth(t, ctx)
	if w <= width+2 {
		return
	}
	wide := eval[[]string](t, ctx, fmt.Sprintf(`[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > %d && getComputedStyle(e).position !== 'fixed').slice(-6).map(e => e.tagName + '.' + e.className + (e.dataset.testid ? '[' + e.dataset.testid + ']' : '') + ' ' + Math.round(e.getBoundingClientRect().right))`, width+2), false)
	t.Errorf("%s: %d px wide in a %d px viewport: %v", what, w, width, wide)
}

func eval[T any](t *testing.T, ctx context.Context, js string, await bool) T {
	t.Helper()
	var opts []chromedp.EvaluateOption
	if await {
		opts = append(opts, chromedp.EvalAwaitPromise)
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, opts...))
	if err != nil {
		t.Fatalf("evaluate %.80s: %v", js, err)
	}
	return v
}

// attr waits for sel and returns its attribute.
func attr(t *testing.T, ctx context.Context, sel, name string) string {
	t.Helper()
	do(t, ctx, chromedp.WaitReady(chromedp.CSS(sel)))
	return eval[string](t, ctx, fmt.Sprintf(`document.querySelector(%q).getAttribute(%q) || ""`, sel, name), false)
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
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

func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	do(t, ctx, chromedp.Click(chromedp.CSS(sel)))
}

// stepUntil clicks Step until the pipeline strip shows stage.
func stepUntil(t *testing.T, ctx context.Context, stage string) {
	t.Helper()
	for i := 0; i < 40; i++ {
		if attr(t, ctx, "[data-current-stage]", "data-current-stage") == stage {
			return
		}
		before := attr(t, ctx, "#state", "data-url")
		click(t, ctx, `[data-action="step"]`)
		waitChange(t, ctx, "#state", "data-url", before)
	}
	t.Fatalf("never reached stage %s", stage)
}

func waitChange(t *testing.T, ctx context.Context, sel, name, before string) {
	t.Helper()
	// poll from Go, so a full page navigation (a boosted link that falls
	// back to a normal one) does not break the wait
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.getAttribute(%q) || "" : %q; })()`, sel, name, before)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err == nil && v != before {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s[%s] stayed %q", sel, name, before)
}

func sumProbs(t *testing.T, ctx context.Context) float64 {
	ps := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="prob"],[data-testid="prob-rest"]')].map(e => e.getAttribute('data-p'))`, false)
	var s float64
	for _, p := range ps {
		v, _ := strconv.ParseFloat(p, 64)
		s += v
	}
	return s
}

// A user types a prompt, steps through every stage of a real generation,
// moves the temperature slider, steps back, and reloads the shared URL.
func TestExplorerInBrowser(t *testing.T) {
	ctx, base := browser(t)
	do(t, ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#prompt`)),
		chromedp.SetValue(chromedp.CSS(`#prompt`), "Once upon a time"),
		chromedp.SetValue(chromedp.CSS(`input[name="temperature"]`), "0"),
		chromedp.Click(chromedp.CSS(`button[data-action="run"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-stage="tokenize"]`)),
	)
	ids := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="token"]')].map(e => e.dataset.tokenId)`, false)
	if strings.Join(ids, " ") != "1 403 407 261 378" {
		t.Errorf("token chips %v, want the engine's 1 403 407 261 378", ids)
	}
	screenshot(t, ctx, "tokenize")
	for _, stage := range []string{"embed", "attention", "mlp", "logits", "softmax"} {
		stepUntil(t, ctx, stage)
		if n := eval[int](t, ctx, fmt.Sprintf(`document.querySelectorAll('[data-stage=%q]').length`, stage), false); n != 1 {
			t.Errorf("stage %s: %d panels", stage, n)
		}
		if stage == "attention" {
			screenshot(t, ctx, "attention")
			// the head selector re-renders the same layer for another head
			eval[any](t, ctx, `(() => { const s = document.querySelector('select[name="head"]'); s.value = "1"; s.dispatchEvent(new Event('change', {bubbles: true})); return null; })()`, false)
			waitChange(t, ctx, `[data-stage="attention"] h2`, "data-head", "0")
			if h := attr(t, ctx, `[data-stage="attention"] h2`, "data-head"); h != "1" {
				t.Errorf("head selector: showing head %s", h)
			}
		}
	}
	screenshot(t, ctx, "softmax")
	if s := sumProbs(t, ctx); math.Abs(s-1) > 1e-4 {
		t.Errorf("softmax probabilities sum to %g", s)
	}
	// the temperature slider re-computes probabilities without a model run
	forwards := attr(t, ctx, "#state", "data-forwards")
	top := attr(t, ctx, `[data-testid="prob"]`, "data-p")
	eval[any](t, ctx, `(() => { const r = document.querySelector('input[name="view_temperature"]'); r.value = "2.5"; r.dispatchEvent(new Event('input', {bubbles: true})); return null; })()`, false)
	waitChange(t, ctx, `[data-testid="prob"]`, "data-p", top)
	if s := sumProbs(t, ctx); math.Abs(s-1) > 1e-4 {
		t.Errorf("probabilities at T=2.5 sum to %g", s)
	}
	if f := attr(t, ctx, "#state", "data-forwards"); f != forwards {
		t.Errorf("moving the slider ran the model: forwards %s → %s", forwards, f)
	}
	stepUntil(t, ctx, "sampler")
	screenshot(t, ctx, "sampler")
	stepUntil(t, ctx, "sample")
	if id := attr(t, ctx, `[data-testid="sampled-token"]`, "data-token-id"); id != "432" {
		t.Errorf("sampled token %s at temperature 0, want generate's greedy 432", id)
	}
	screenshot(t, ctx, "sample")
	click(t, ctx, `[data-action="back"]`)
	waitChange(t, ctx, "[data-current-stage]", "data-current-stage", "sample")
	if s := attr(t, ctx, "[data-current-stage]", "data-current-stage"); s != "sampler" {
		t.Errorf("back from sample: %s", s)
	}
	// keyboard: → steps; measure key press to rendered panel in the page
	keyMS := eval[float64](t, ctx, `new Promise(r => { const s = document.querySelector('#state').dataset.url; const t0 = performance.now();
		document.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight', bubbles: true}));
		const f = () => { if (document.querySelector('#state').dataset.url !== s) r(performance.now() - t0); else requestAnimationFrame(f); }; f(); })`, true)
	t.Logf("key press to rendered panel: %.1f ms", keyMS)
	if s := attr(t, ctx, "[data-current-stage]", "data-current-stage"); s != "sample" {
		t.Errorf("→ key: stage %s, want sample", s)
	}
	// the URL is the shareable state: reloading lands on the same view
	url, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.Contains(url, "stage=") || !strings.Contains(url, "prompt=Once") {
		t.Fatalf("URL %s does not carry the state (%v)", url, err)
	}
	do(t, ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`[data-stage="sample"]`)))
	if id := attr(t, ctx, `[data-testid="sampled-token"]`, "data-token-id"); id != "432" {
		t.Errorf("after reload: sampled token %s", id)
	}
	// n runs one decode step
	eval[any](t, ctx, `document.dispatchEvent(new KeyboardEvent('keydown', {key: 'n', bubbles: true}))`, false)
	waitChange(t, ctx, "[data-current-stage]", "data-current-stage", "sample")
	gen := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="generated-token"]')].map(e => e.dataset.tokenId)`, false)
	if strings.Join(gen, " ") != "432" {
		t.Errorf("generated at the start of the next token step: %v, want 432 (383 is not drawn yet)", gen)
	}
	stepUntil(t, ctx, "sample")
	gen = eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="generated-token"]')].map(e => e.dataset.tokenId)`, false)
	if strings.Join(gen, " ") != "432 383" {
		t.Errorf("generated after the next draw: %v, want 432 383", gen)
	}
	screenshot(t, ctx, "next-token")
	// the projector theme
	click(t, ctx, `[data-action="theme"]`)
	if th := eval[string](t, ctx, `document.documentElement.dataset.theme || ""`, false); th != "projector" {
		t.Errorf("theme toggle: %q", th)
	}
	screenshot(t, ctx, "projector")
}

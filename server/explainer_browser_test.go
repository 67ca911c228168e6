package server

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// rows reads the softmax panel's rows: p, cumulative and logit.
func rows(t *testing.T, ctx context.Context) [][3]float64 {
	t.Helper()
	raw := eval[[][]string](t, ctx, `[...document.querySelectorAll('[data-testid="prob"]')].map(r => [r.dataset.p, r.dataset.cum, r.dataset.logit, r.querySelector('[data-testid="pbar"]').getAttribute('value')])`, false)
	var out [][3]float64
	for _, r := range raw {
		var v [4]float64
		for i := range v {
			v[i], _ = strconv.ParseFloat(r[i], 64)
		}
		if math.Abs(v[3]-100*v[0]) > 0.01 {
			t.Errorf("a bar %g%% wide for p %g: bars must be the probability on one scale", v[3], v[0])
		}
		out = append(out, [3]float64{v[0], v[1], v[2]})
	}
	return out
}

// The softmax and sampler pictures in a real browser: the first page's
// examples, bars on one 0–100% scale whose ratios are the engine's
// logits at the slider's T, the top-p slider moving the cut where the
// run's sampler chain makes it (the model map's count at the run's own
// settings) with no forward pass, the slider writing into the
// settings form, and the sampler's funnel and cumulative column.
func TestSoftmaxAndSamplerPicturesInBrowser(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	do(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="start-here"]`)))
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="example"]').length`, false); n < 3 {
		t.Fatalf("%d example prompts on the first page", n)
	}
	screenshot(t, ctx, "first-page")
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-testid="example"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-stage="tokenize"]`)))
	// attention: the arcs are the current row of the heatmap; a head
	// thumbnail shows that head
	click(t, ctx, `[data-testid="map-attention-2"]`)
	waitChange(t, ctx, "[data-current-stage]", "data-current-stage", "tokenize")
	arcs := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="attn-arc"]')].map(a => a.dataset.w)`, false)
	rowsJS := `document.querySelector('[data-testid="attn-heatmap"]').dataset.values.split(';')`
	heat := eval[[]string](t, ctx, rowsJS, false)
	last := strings.Fields(heat[len(heat)-1])
	if len(arcs) == 0 || len(arcs) != len(last) {
		t.Fatalf("arcs %v, the heatmap's current row %v", arcs, last)
	}
	for j := range arcs {
		a, _ := strconv.ParseFloat(arcs[j], 64)
		h, _ := strconv.ParseFloat(last[j], 64)
		if math.Abs(a-h) > 1e-3 {
			t.Errorf("arc %d weighs %g, the heatmap's current row %g", j, a, h)
		}
	}
	if eval[string](t, ctx, `document.querySelector('[data-testid="attn-heatmap"]').dataset.painted || ""`, false) != "1" {
		t.Error("the heatmap canvas was not painted")
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="head-thumb"]').length`, false); n < 2 {
		t.Errorf("%d head thumbnails", n)
	}
	click(t, ctx, `[data-testid="head-thumb"][data-head="1"]`)
	waitChange(t, ctx, `[data-stage="attention"] h2`, "data-head", "0")
	if h := attr(t, ctx, `[data-stage="attention"] h2`, "data-head"); h != "1" {
		t.Errorf("head thumbnail 2: showing head index %s", h)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-testid="attn-math"] summary`)))
	screenshot(t, ctx, "attention")
	click(t, ctx, `[data-testid="map-softmax"]`)
	waitChange(t, ctx, "[data-current-stage]", "data-current-stage", "attention")
	temp := eval[string](t, ctx, `document.querySelector('input[name="view_temperature"]').value`, false)
	if f := eval[string](t, ctx, `document.querySelector('form.settings input[name="temperature"]').value`, false); f != temp {
		t.Errorf("the slider says T = %s, the settings form %s", temp, f)
	}
	T, _ := strconv.ParseFloat(temp, 64)
	check := func(T float64) [][3]float64 {
		r := rows(t, ctx)
		for i := 1; i < len(r); i++ { // p_i / p_j = exp((z_i − z_j) / T)
			if r[i][0] > 1e-6 && math.Abs(math.Log(r[i-1][0]/r[i][0])*T-(r[i-1][2]-r[i][2])) > 2e-3 {
				t.Errorf("rows %d and %d: p %g, %g do not follow logits %g, %g at T = %g", i-1, i, r[i-1][0], r[i][0], r[i-1][2], r[i][2], T)
			}
		}
		return r
	}
	check(T)
	if s := sumProbs(t, ctx); math.Abs(s-1) > 1e-4 {
		t.Errorf("probabilities sum to %g", s)
	}
	if h := attr(t, ctx, `[data-testid="p-hover"]`, "title"); !strings.HasPrefix(h, "p = exp((logit − max) / T) ÷ Σ = exp((") || !strings.HasSuffix(h, eval[string](t, ctx, `document.querySelector('[data-testid="p-hover"]').textContent`, false)) {
		t.Errorf("a probability's hover %q", h)
	}
	if !strings.Contains(eval[string](t, ctx, `document.querySelector('[data-testid="chain-order"]').textContent`, false), "temperature") {
		t.Error("the softmax panel does not say where temperature sits in the chain")
	}
	// at the run's own settings the panel keeps what the model map's
	// sampler chain keeps ("1024 → N candidates")
	nums := eval[string](t, ctx, `(document.querySelector('details.map') || {dataset: {}}).dataset.nums || document.querySelector('#map-state').dataset.nums`, false)
	var mapKept string // O<n> for the chain's last step n: "{I1} → {On} candidates"
	for n := 1; ; n++ {
		v, ok := "", false
		for _, kv := range strings.Split(nums, ";") {
			if x, found := strings.CutPrefix(kv, fmt.Sprintf("O%d=", n)); found {
				v, ok = x, true
			}
		}
		if !ok {
			break
		}
		mapKept = v
	}
	if k := attr(t, ctx, `[data-testid="nucleus"]`, "data-kept"); mapKept == "" || k != mapKept {
		t.Errorf("the softmax panel keeps %s tokens, the model map's chain %q (nums %q)", k, mapKept, nums)
	}
	if s := eval[string](t, ctx, `document.querySelector('[data-testid="slider-effect"]').textContent`, false); !strings.Contains(s, "does not change which tokens are kept") {
		t.Errorf("in llama.cpp's order the panel must say the temperature slider does not change the kept tokens: %q", s)
	}
	forwards := attr(t, ctx, "#state", "data-forwards")
	for _, p := range []string{"0.5", "0.8", "0.3"} {
		before := attr(t, ctx, `[data-testid="nucleus"]`, "data-top-p")
		eval[any](t, ctx, fmt.Sprintf(`(() => { const r = document.querySelector('input[name="view_top_p"]'); r.value = %q; r.dispatchEvent(new Event('input', {bubbles: true})); return null; })()`, p), false)
		waitChange(t, ctx, `[data-testid="nucleus"]`, "data-top-p", before)
		want, _ := strconv.ParseFloat(p, 64)
		kept, _ := strconv.Atoi(attr(t, ctx, `[data-testid="nucleus"]`, "data-kept"))
		r := check(T)
		if kept < 1 || kept > len(r) {
			t.Fatalf("top-p %s keeps %d of %d listed", p, kept, len(r))
		}
		out := eval[[]bool](t, ctx, `[...document.querySelectorAll('[data-testid="prob"]')].map(r => r.classList.contains('out'))`, false)
		for i, o := range out { // the chain (top-k, top-p, min-p at T = 1) keeps a prefix of these bars
			if o != (i >= kept) {
				t.Errorf("top-p %s, %d kept: row %d greyed out = %v", p, kept, i+1, o)
			}
		}
		if want >= 1 || kept >= len(r) {
			continue
		}
		if a := attr(t, ctx, `[data-testid="topp-cut"]`, "data-after"); a != strconv.Itoa(kept) {
			t.Errorf("top-p %s: the cut line after row %s, want %d", p, a, kept)
		}
		if f := eval[string](t, ctx, `document.querySelector('form.settings input[name="top_p"]').value`, false); f != p {
			t.Errorf("top-p slider %s, settings form %s", p, f)
		}
	}
	if f := attr(t, ctx, "#state", "data-forwards"); f != forwards {
		t.Errorf("moving the top-p slider ran the model: forwards %s → %s", forwards, f)
	}
	screenshot(t, ctx, "softmax-top-p")
	// the sampler: a funnel of the chain's counts, p going in, and at
	// top-p the cumulative column the cut follows
	click(t, ctx, `[data-testid="map-sampler-4"]`)
	waitChange(t, ctx, "[data-current-stage]", "data-current-stage", "softmax")
	if lit := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="model-map"] text.tag.here')].map(x => x.dataset.tagOf + ' ' + x.textContent)`, false); len(lit) != 1 || !strings.HasPrefix(lit[0], "sampler-4 ") {
		t.Errorf("the sampler chain's lit name: %q, want sampler step 4's alone", lit)
	}
	steps := eval[[][]string](t, ctx, `[...document.querySelectorAll('[data-testid="funnel-step"]')].map(g => [g.dataset.in, g.dataset.out])`, false)
	chips := eval[int](t, ctx, `document.querySelectorAll('.strip button[data-goto-stage="sampler"]').length`, false)
	if len(steps) != chips {
		t.Errorf("funnel of %d steps, the chain has %d", len(steps), chips)
	}
	for i := 1; i < len(steps); i++ {
		if steps[i][0] != steps[i-1][1] {
			t.Errorf("funnel step %d takes %s in, the step before kept %s", i+1, steps[i][0], steps[i-1][1])
		}
	}
	if st := attr(t, ctx, "[data-current-stage]", "data-sampler-step"); st != "3" || eval[int](t, ctx, `document.querySelectorAll('[data-testid="topp-rule"]').length`, false) != 1 {
		t.Errorf("at sampler step index %s: no top-p rule and cumulative column", st)
	} else {
		kept := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="kept"]')].map(r => r.dataset.cum)`, false)
		last, _ := strconv.ParseFloat(kept[len(kept)-1], 64)
		prev := 0.0
		if len(kept) > 1 {
			prev, _ = strconv.ParseFloat(kept[len(kept)-2], 64)
		}
		if last < 0.95-1e-6 || prev >= 0.95 {
			t.Errorf("top-p 0.95 kept %d: cumulative %g then %g", len(kept), prev, last)
		}
	}
	screenshot(t, ctx, "sampler-funnel")
}

package server

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// A qwen3 and a gemma3 file (random weights, real layouts) step through
// every stage of the Explorer in the browser, on the CPU and on Vulkan
// (lavapipe in CI): the map names each family's differences and draws
// gemma's local layers, and every stage shows its panel.
func TestFamiliesInBrowser(t *testing.T) {
	dir := t.TempDir()
	for _, o := range []model.SynthOptions{
		{Arch: "qwen3", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 96, Vocab: 600, Context: 256, Type: quant.Q8_0, RopeBase: 1e6, Name: "tiny qwen3"},
		{Arch: "gemma3", Embd: 64, Layers: 3, Heads: 2, KVHeads: 1, HeadDim: 32, FFN: 128, Vocab: 700, Context: 256, Type: quant.F32, Tied: true,
			Window: 4, SWAPeriod: 3, RopeBase: 1e6, Name: "tiny gemma3"},
	} {
		w, err := model.Synthesize(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteFile(filepath.Join(dir, o.Arch+".gguf")); err != nil {
			t.Fatal(err)
		}
	}
	ctx, base := browserWith(t, Config{ModelsDirs: []string{dir}})
	do(t, ctx, chromedp.EmulateViewport(1280, 800))
	for _, arch := range []string{"qwen3", "gemma3"} {
		for _, backend := range []string{"cpu", "vulkan"} {
			q := url.Values{"model": {arch + ".gguf"}, "backend": {backend}, "prompt": {"the little cat saw a big red ball and the dog"}, "max_tokens": {"2"}, "seed": {"3"}}
			do(t, ctx, chromedp.Navigate(base+"/?"+q.Encode()), chromedp.WaitVisible(chromedp.CSS(`[data-testid="model-map"] svg`)))
			info := eval[string](t, ctx, `document.querySelector('.meta').textContent`, false)
			if backend == "vulkan" && !strings.Contains(info, "vulkan") && os.Getenv("REQUIRE_VULKAN") == "1" {
				t.Errorf("%s on vulkan ran on %q", arch, info)
			}
			family := eval[string](t, ctx, `(document.querySelector('[data-testid="map-family"]') || {}).textContent || ""`, false)
			want := map[string]string{"qwen3": "query and key RMS-normed", "gemma3": "GELU-gated MLP"}[arch]
			if !strings.Contains(family, want) {
				t.Errorf("%s: the map's family line %q lacks %q", arch, family, want)
			}
			if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid^="map-attention-"].local').length`, false); (arch == "gemma3") != (n > 0) {
				t.Errorf("%s: %d local attention parts drawn", arch, n)
			}
			seen := map[string]bool{}
			for i := 0; i < 60; i++ {
				stage := attr(t, ctx, "[data-current-stage]", "data-current-stage")
				seen[stage] = true
				if eval[int](t, ctx, fmt.Sprintf(`document.querySelectorAll('#explorer section.panel[data-stage=%q]').length`, stage), false) != 1 {
					t.Fatalf("%s %s: stage %s shows no panel", arch, backend, stage)
				}
				if stage == "kv" && seen["sample"] && len(seen) >= 9 {
					break
				}
				before := stage + attr(t, ctx, "[data-current-stage]", "data-layer") + attr(t, ctx, "[data-current-stage]", "data-sampler-step")
				eval[any](t, ctx, `document.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight', bubbles: true}))`, false)
				waitFor(t, ctx, fmt.Sprintf(`(() => { const e = document.querySelector('[data-current-stage]'); return e && (e.dataset.currentStage + e.dataset.layer + e.dataset.samplerStep) !== %q; })()`, before))
			}
			for _, k := range []string{"tokenize", "embed", "attention", "mlp", "logits", "softmax", "sampler", "sample", "kv"} {
				if !seen[k] {
					t.Errorf("%s on %s: never reached the %s stage (saw %v)", arch, backend, k, seen)
				}
			}
			screenshot(t, ctx, "family-"+arch+"-"+backend)
		}
	}
}

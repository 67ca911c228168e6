package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// The pictures of the Explorer at each stage (docs/PAGES.md, one in the
// README), taken by this test at a projector's width on the lesson
// model: written into docs/screenshots with UPDATE_SCREENSHOTS=1 (go tool
// task screenshots), into a temporary directory otherwise.
func TestDocsScreenshots(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	dir := t.TempDir()
	if os.Getenv("UPDATE_SCREENSHOTS") == "1" {
		dir = filepath.Join("..", "docs", "screenshots")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	do(t, ctx, chromedp.EmulateViewport(1280, 720), chromedp.Navigate(base+"/?prompt=She+was+very&model=lesson.gguf&seed=3"),
		chromedp.WaitVisible(chromedp.CSS(`[data-stage="tokenize"]`)))
	for _, s := range []struct{ name, part, stage string }{
		{"1-tokenize", "", "tokenize"}, {"2-embed", "map-embed", "embed"}, {"3-attention", "map-attention-2", "attention"},
		{"4-mlp", "map-mlp-2", "mlp"}, {"5-logits", "map-logits", "logits"}, {"6-softmax", "map-softmax", "softmax"},
		{"7-sampler-top-p", "map-sampler-4", "sampler"}, {"8-sample", "map-sample", "sample"}, {"9-kv-cache", "map-kv", "kv"},
	} {
		if s.part != "" {
			before := attr(t, ctx, "[data-current-stage]", "data-current-stage")
			click(t, ctx, `[data-testid="`+s.part+`"]`)
			waitChange(t, ctx, "[data-current-stage]", "data-current-stage", before)
		}
		if got := attr(t, ctx, "[data-current-stage]", "data-current-stage"); got != s.stage {
			t.Fatalf("%s: at %s", s.name, got)
		}
		eval[any](t, ctx, `window.scrollTo(0, 0)`, false)
		buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(80)) // JPEG: a tenth of a PNG
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "explorer-"+s.name+".jpg"), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots in %s", dir)
}

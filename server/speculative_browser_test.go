package server

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"stepthrough/models"
)

// Speculative decoding in a real browser at phone and projector sizes: the
// Explorer's round steps through propose (ghost chips with q), verify,
// accept (verdicts) and rollback (cache rows appended and dropped), and
// Compare shows a speculative lane with the greedy lane's tokens and a
// measured speed for each.
func TestSpeculativeInBrowser(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: map[string][]byte{"lesson.gguf": models.Lesson, "lesson-draft.gguf": models.LessonDraft}})
	q := url.Values{"prompt": {"Once upon a time, there was a girl named"}, "model": {"lesson.gguf"}, "draft": {"lesson-draft.gguf"}, "draft_k": {"4"},
		"temperature": {"1"}, "seed": {"11"}, "max_tokens": {"24"}, "step": {"1"}, "stage": {"0"}}
	for _, size := range phoneAndProjector {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(base+"/?"+q.Encode()), chromedp.WaitVisible(chromedp.CSS(`[data-stage="propose"]`)))
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="proposal"].ghost').length`, false); n != 4 {
			t.Errorf("%s: %d ghost chips, want the draft's 4 guesses", size.name, n)
		}
		if v := eval[string](t, ctx, `document.querySelector('[data-testid="proposal"]').dataset.verdict`, false); v != "" {
			t.Errorf("%s: a verdict (%q) shown before the target verified", size.name, v)
		}
		screenshot(t, ctx, "spec-propose-"+size.name)
		stepUntil(t, ctx, "accept")
		verdicts := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="proposal"]')].map(e => e.dataset.verdict)`, false)
		kept := 0
		for kept < len(verdicts) && verdicts[kept] == "accepted" {
			kept++
		}
		for i, v := range verdicts {
			want := "unchecked"
			switch {
			case i < kept:
				want = "accepted"
			case i == kept:
				want = "rejected"
			}
			if v != want {
				t.Errorf("%s: verdicts %v: guess %d is %s, want %s", size.name, verdicts, i+1, v, want)
			}
		}
		if eval[int](t, ctx, `document.querySelectorAll('[data-testid="spec-next"]').length`, false) != 1 {
			t.Errorf("%s: no token emitted after the verdicts", size.name)
		}
		screenshot(t, ctx, "spec-accept-"+size.name)
		stepUntil(t, ctx, "rollback")
		states := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="kv-cell"]')].map(e => e.dataset.state)`, false)
		if !slices.Contains(states, "new") || slices.Contains(states, "dropped") != (kept < 4) {
			t.Errorf("%s: cache cells %v after %d of 4 kept", size.name, states, kept)
		}
		if ms := eval[string](t, ctx, `document.querySelector('[data-testid="plain-step-ms"]').textContent`, false); ms == "0.000" || ms == "" {
			t.Errorf("%s: plain decode step measured as %q", size.name, ms)
		}
		if sp := eval[string](t, ctx, `document.querySelector('[data-testid="spec-speedup"]').textContent`, false); !strings.Contains(sp, "× the speed of plain decoding") {
			t.Errorf("%s: no measured speed-up: %q", size.name, sp)
		}
		fits(t, ctx, int(size.w), size.name+": the page")
		screenshot(t, ctx, "spec-rollback-"+size.name)
	}
	// the lesson: the prediction question on the draft's guesses, then
	// the verdicts (the second guess rejected)
	for _, size := range phoneAndProjector {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(base+"/lessons/speculative-decoding?step=1"), chromedp.WaitVisible(chromedp.CSS(`[data-stage="propose"]`)))
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="proposal"].ghost').length`, false); n != 4 {
			t.Errorf("lesson %s: %d ghost chips", size.name, n)
		}
		screenshot(t, ctx, "lesson-spec-guess-"+size.name)
		do(t, ctx, chromedp.Navigate(base+"/lessons/speculative-decoding?step=3"), chromedp.WaitVisible(chromedp.CSS(`[data-stage="accept"]`)))
		verdicts := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="proposal"]')].map(e => e.dataset.verdict)`, false)
		if !slices.Equal(verdicts, []string{"accepted", "rejected", "unchecked", "unchecked"}) {
			t.Errorf("lesson %s: verdicts %v, the lesson says one kept then a rejection", size.name, verdicts)
		}
		fits(t, ctx, int(size.w), "lesson "+size.name+": the page")
		screenshot(t, ctx, "lesson-spec-accept-"+size.name)
	}
	// Compare: a speculative lane beside greedy decoding
	cq := url.Values{"prompt": {"Once upon a time"}, "model": {"lesson.gguf"}, "n": {"24"}, "lane": {"greedy", "greedy,spec=lesson-draft.gguf,k=4"}, "step": {"23"}}
	do(t, ctx, chromedp.Navigate(base+"/compare?"+cq.Encode()), chromedp.WaitVisible(chromedp.CSS(`[data-testid="lane"]`)))
	lanes := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="lane"]')].map(l => [...l.querySelectorAll('[data-testid="lane-token"]')].map(e => e.dataset.tokenId).join(" "))`, false)
	if len(lanes) != 2 || lanes[0] != lanes[1] || lanes[0] == "" {
		t.Errorf("greedy and speculative lanes: %q", lanes)
	}
	// the same token shows different probabilities in the two lanes: each
	// column says which distribution it is
	dists := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="lane-dist"]')].map(e => e.textContent)`, false)
	if len(dists) != 2 || !strings.Contains(dists[0], "greedy puts it all on the argmax") || !strings.Contains(dists[1], "target model's p at temperature 1") {
		t.Errorf("the lanes' probability columns: %q", dists)
	}
	text := eval[string](t, ctx, `document.body.textContent`, false)
	if strings.Count(text, "t/s (") != 2 || !strings.Contains(text, "kept, ") {
		t.Errorf("Compare shows no measured speed per lane or no draft figures")
	}
	screenshot(t, ctx, "spec-compare")
}

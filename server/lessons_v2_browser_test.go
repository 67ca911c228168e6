package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The chat, tool and reasoning lessons play in a real browser at phone and
// projector sizes: chat markup shows as its control tokens, the
// calculator's result is shown as written by the runtime (not sampled)
// with the runtime's note, and the thinking tokens are there.
func TestChatToolReasoningLessonsInBrowser(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	for _, size := range phoneAndProjector {
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h))
		// tool calls: the pass that reads the result
		do(t, ctx, chromedp.Navigate(base+"/lessons/tool-calls?step=2"))
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="inserted-token"]').length`, false); n < 3 {
			t.Errorf("%s: %d inserted tokens shown, want the runtime's <result>…</result>", size.name, n)
		}
		note := eval[string](t, ctx, `document.querySelector('[data-testid="notice"]')?.textContent || ""`, false)
		if !strings.Contains(note, "<result>432</result>") {
			t.Errorf("%s: runtime note %q", size.name, note)
		}
		fits(t, ctx, int(size.w), size.name+": the page")
		screenshot(t, ctx, fmt.Sprintf("lesson-tool-calls-%s", size.name))
		// chat: the reply ends with the end-of-turn token, shown by name
		do(t, ctx, chromedp.Navigate(base+"/lessons/chat-and-stop-tokens?step=2&answer=x")) // answered: the numbers show
		gen := eval[string](t, ctx, `document.querySelector('.generated')?.textContent || ""`, false)
		if !strings.HasSuffix(strings.TrimSpace(gen), "<|end|>") {
			t.Errorf("%s: chat reply shown as %q", size.name, gen)
		}
		do(t, ctx, chromedp.Navigate(base+"/lessons/chat-and-stop-tokens?step=0"))
		chips := eval[string](t, ctx, `document.querySelector('section[data-stage="tokenize"]')?.textContent || ""`, false)
		if !strings.Contains(chips, "<|user|>") || !strings.Contains(chips, "<|assistant|>") {
			t.Errorf("%s: the tokenize panel does not show the role markers", size.name)
		}
		screenshot(t, ctx, fmt.Sprintf("lesson-chat-%s", size.name))
		// reasoning: the scratchpad is in the generated text
		do(t, ctx, chromedp.Navigate(base+"/lessons/reasoning-tokens?step=2&answer=x"))
		gen = eval[string](t, ctx, `document.querySelector('.generated')?.textContent || ""`, false)
		if !strings.Contains(gen, "<think>") || !strings.Contains(gen, "so 0432") {
			t.Errorf("%s: reasoning shown as %q", size.name, gen)
		}
		screenshot(t, ctx, fmt.Sprintf("lesson-reasoning-%s", size.name))
	}
}

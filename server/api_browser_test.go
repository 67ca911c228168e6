package server

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// "Watch this request" and the tool loop in a real browser at phone and
// projector sizes: an API request's page shows its prompt and tokens and
// opens in the Explorer with the same tokens; the agent page runs the
// calculator loop through the API and the reasoning comparison.
func TestAPIPagesInBrowser(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	client := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	res, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "lesson.gguf",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the capital of Italy?")}, Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range phoneAndProjector {
		link := `[data-testid="request"] a[href="/requests/` + res.ID + `"]`
		do(t, ctx, chromedp.EmulateViewport(size.w, size.h), chromedp.Navigate(base+"/requests"), chromedp.WaitVisible(chromedp.CSS(link)))
		click(t, ctx, link)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="rendered-prompt"]`)))
		if got := eval[string](t, ctx, `document.querySelector('[data-testid="rendered-prompt"]').textContent`, false); got != "<|user|>What is the capital of Italy?<|end|><|assistant|>" {
			t.Errorf("%s: rendered prompt %q", size.name, got)
		}
		apiIDs := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="request-token"]')].map(e => e.dataset.tokenId)`, false)
		fits(t, ctx, int(size.w), size.name+": the request page")
		screenshot(t, ctx, "api-request-"+size.name)
		click(t, ctx, `[data-testid="open-explorer"]`)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-stage="tokenize"]`)))
		stepUntil(t, ctx, "tokenize") // the replay opens at its first stage
		click(t, ctx, `[data-action="end"]`)
		do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-stage="kv"]`)))
		text := eval[string](t, ctx, `document.querySelector('.generated').textContent`, false)
		if !strings.Contains(text, res.Choices[0].Message.Content) || len(apiIDs) != int(res.Usage.CompletionTokens) {
			t.Errorf("%s: the Explorer's replay wrote %q; the API %q (%d tokens shown)", size.name, text, res.Choices[0].Message.Content, len(apiIDs))
		}
		screenshot(t, ctx, "api-replay-"+size.name)
		do(t, ctx, chromedp.Navigate(base+"/agent"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="answer"]`)))
		if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="pass"]').length`, false); n != 2 {
			t.Errorf("%s: %d inference requests in the tool loop, want 2", size.name, n)
		}
		if r := eval[string](t, ctx, `document.querySelector('[data-testid="tool-result"]').textContent`, false); r != "432" {
			t.Errorf("%s: tool result %q", size.name, r)
		}
		if th := eval[int](t, ctx, `document.querySelectorAll('[data-testid="thinking"]').length`, false); th != 1 {
			t.Errorf("%s: %d thinking blocks, want the step-by-step answer's", size.name, th)
		}
		fits(t, ctx, int(size.w), size.name+": the agent page")
		screenshot(t, ctx, "agent-"+size.name)
	}
}

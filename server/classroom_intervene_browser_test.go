package server

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// A room on "The head that copies": at the step that switches a head
// off, the class's screen names the intervention and shows the next
// token's probabilities before and after once the instructor reveals the
// poll (not before: the numbers answer it), and the projector view, at a
// room's size, shows the same.
func TestRoomShowsALessonsIntervention(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	ctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/classroom"))
	click(t, ctx, `[data-testid="start-room"][data-lesson="the-head-that-copies"]`)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="join-code"]`)))
	code := eval[string](t, ctx, `document.querySelector('[data-testid="join-code"]').textContent.trim()`, false)
	for step := 1; step <= 3; step++ {
		waitJS(t, ctx, "the next button", `!!document.querySelector('[data-action="lesson-next"]')`)
		eval[bool](t, ctx, `document.querySelector('[data-action="lesson-next"]').click(); true`, false)
		waitJS(t, ctx, "the next step", `document.querySelector('#room-view').dataset.lessonStep === "`+itoa(step)+`"`)
	}
	edits := `document.querySelector('#room-view [data-testid="edit-effect"]')`
	if eval[bool](t, ctx, `!!`+edits, false) {
		t.Error("the intervention's before and after show before the reveal")
	}
	click(t, ctx, `[data-action="reveal"]`)
	waitJS(t, ctx, "the intervention after the reveal", `!!`+edits+` && `+edits+`.querySelector('h2').textContent.includes('L4H1')`)
	if n := eval[int](t, ctx, `document.querySelectorAll('#room-view [data-testid="edit-row"]').length`, false); n == 0 {
		t.Error("no before and after rows")
	}
	screenshot(t, ctx, "room-intervention")
	do(t, ctx, chromedp.EmulateViewport(1920, 1080), chromedp.Navigate(base+"/rooms/"+code+"/projector"),
		chromedp.WaitVisible(chromedp.CSS(`#room-view`)))
	waitJS(t, ctx, "the intervention on the projector", `!!`+edits)
	if w := eval[float64](t, ctx, edits+`.getBoundingClientRect().right`, false); w > 1920 {
		t.Errorf("the intervention's panel ends at %.0f px, past the 1920 px screen", w)
	}
	screenshot(t, ctx, "room-intervention-projector")
}

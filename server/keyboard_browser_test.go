package server

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"stepthrough/views"
)

// Keyboard-only walks: every key is a real key event (CDP), and after
// each one — and after each redraw it causes — focus must be on an
// element of the page, never on <body>.

// keyWalk drives one page by the keyboard and counts its Tab presses.
type keyWalk struct {
	t    *testing.T
	ctx  context.Context
	who  string
	tabs int
}

func newKeyWalk(t *testing.T, ctx context.Context, who string) *keyWalk {
	t.Helper()
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error { // focus as in the window in front
		_, err := cdp.Call(ctx, tg, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
		return err
	}))
	return &keyWalk{t: t, ctx: ctx, who: who}
}

// focused describes document.activeElement ("body" when focus is lost).
const focusedJS = `(a => !a || a === document.body || a === document.documentElement ? "body" :
	a.localName + (a.id ? "#" + a.id : "") + ["data-testid", "data-action", "name", "data-head", "data-goto-stage", "data-answer"].filter(k => a.hasAttribute(k)).map(k => "[" + k + "=" + JSON.stringify(a.getAttribute(k)) + "]").join(""))(document.activeElement)`

func (w *keyWalk) focused() string {
	w.t.Helper()
	return eval[string](w.t, w.ctx, focusedJS, false)
}

// key presses keys and fails if focus is then on <body>.
func (w *keyWalk) key(keys string, opts ...chromedp.KeyOption) {
	w.t.Helper()
	do(w.t, w.ctx, chromedp.KeyEvent(keys, opts...))
	w.notLost("after " + strconv.Quote(keys))
}

func (w *keyWalk) notLost(when string) {
	w.t.Helper()
	if f := w.focused(); f == "body" {
		w.t.Fatalf("%s: focus fell to <body> %s", w.who, when)
	}
}

// at reports whether the focused element matches sel.
func (w *keyWalk) at(sel string) bool {
	w.t.Helper()
	return eval[bool](w.t, w.ctx, fmt.Sprintf(`!!document.activeElement && document.activeElement.matches(%q)`, sel), false)
}

// mustBeAt fails unless focus is on sel.
func (w *keyWalk) mustBeAt(sel, when string) {
	w.t.Helper()
	if !w.at(sel) {
		w.t.Fatalf("%s: %s: focus on %s, want %s", w.who, when, w.focused(), sel)
	}
}

// tabTo presses Tab until focus is on sel — Shift+Tab when sel comes
// before the focused element — at most max times, and returns how many it
// took.
func (w *keyWalk) tabTo(sel string, max int) int {
	w.t.Helper()
	var opts []chromedp.KeyOption
	if eval[bool](w.t, w.ctx, fmt.Sprintf(`(a => !!a && !!document.querySelector(%q) && !!(a.compareDocumentPosition(document.querySelector(%q)) & Node.DOCUMENT_POSITION_PRECEDING))(document.activeElement)`, sel, sel), false) {
		opts = append(opts, chromedp.KeyModifiers(chromedp.ModifierShift))
	}
	for n := 1; n <= max; n++ {
		w.key(kb.Tab, opts...)
		w.tabs++
		if w.at(sel) {
			return n
		}
	}
	w.t.Fatalf("%s: %d Tabs did not reach %s (at %s)", w.who, max, sel, w.focused())
	return 0
}

// after presses keys, waits for js to hold (the redraw they cause), and
// fails if focus is not then on sel.
func (w *keyWalk) after(keys, what, js, sel string) {
	w.t.Helper()
	w.key(keys)
	waitJS(w.t, w.ctx, w.who+": "+what, js)
	w.mustBeAt(sel, what)
}

// liveRegion is what the accessibility tree holds for the page's polite
// live region (role status): the text a screen reader says.
func liveRegion(t *testing.T, ctx context.Context) string {
	t.Helper()
	var nodes []*accessibility.Node
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		r, err := cdp.Call(ctx, tg, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
		nodes = r.Nodes
		return err
	}))
	byID := map[accessibility.NodeID]*accessibility.Node{}
	for _, n := range nodes {
		byID[n.NodeID] = n
	}
	str := func(v *accessibility.Value) string {
		var s string
		if v != nil {
			jsonv2.Unmarshal(v.Value, &s)
		}
		return s
	}
	var text func(n *accessibility.Node) string
	text = func(n *accessibility.Node) string {
		if str(n.Role) == "StaticText" {
			return str(n.Name)
		}
		var b strings.Builder
		for _, c := range n.ChildIDs {
			if k := byID[c]; k != nil {
				b.WriteString(text(k))
			}
		}
		return b.String()
	}
	var found []string
	for _, n := range nodes {
		polite := false
		for _, p := range n.Properties {
			if p.Name == accessibility.PropertyNameLive && str(p.Value) == "polite" {
				polite = true
			}
		}
		if str(n.Role) == "status" && polite {
			found = append(found, text(n))
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d polite status regions in the accessibility tree (%q), want one", len(found), found)
	}
	return found[0]
}

// announced waits for the live region's text to contain want.
func announced(t *testing.T, ctx context.Context, who, want string) {
	t.Helper()
	waitJS(t, ctx, who+": the live region to say "+strconv.Quote(want), fmt.Sprintf(`document.querySelector('#announce').textContent.includes(%q)`, want))
}

// A student's first walk in the Explorer, by keyboard alone: type a
// prompt, Run, reach Step → in five Tabs, Enter through every stage of the
// first token (the live region names each), the pipeline strip as one tab
// stop with arrow keys, both softmax sliders three notches each (focus
// stays on the slider, the stage stays softmax, the kept count updates),
// a head picked from the thumbnails and switched off and on.
func TestExplorerKeyboardWalk(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	do(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`#prompt`)))
	w := newKeyWalk(t, ctx, "student")
	if n := w.tabTo(`[data-testid="skip-to-stage"]`, 1); n != 1 {
		t.Errorf("the skip link is Tab %d, want the first", n)
	}
	toPrompt := w.tabTo(`#prompt`, 30)
	t.Logf("Tabs from the top to the prompt: %d", toPrompt)
	do(t, ctx, chromedp.KeyEvent("The capital of France is"))
	w.tabs = 0
	w.tabTo(`button[data-action="run"]`, 4)
	w.after(kb.Enter, "the run", `document.querySelector('#state')?.dataset.stageLabel === "tokenize"`, `button[data-action="run"]`)
	w.tabTo(`[data-testid="skip-to-steps"]`, 1)
	if w.tabs > 5 {
		t.Errorf("Step → is %d Tabs from the prompt, want at most 5", w.tabs)
	}
	w.key(kb.Enter)
	w.mustBeAt(`#action-step`, "the skip link to the step controls")
	t.Logf("from the prompt: %d Tabs to Run, then Tab and Enter on “Skip to the step controls”: %d Tabs to Step →", w.tabs-1, w.tabs)

	// Enter on Step →, again and again, through the first token's stages
	stages := eval[int](t, ctx, `document.querySelectorAll('.strip button').length`, false)
	for i := 1; i < stages; i++ {
		url := attr(t, ctx, "#state", "data-url")
		w.after(kb.Enter, fmt.Sprintf("step %d", i), fmt.Sprintf(`document.querySelector('#state').dataset.url !== %q`, url), `#action-step`)
		label := attr(t, ctx, "#state", "data-stage-label")
		if cur := eval[int](t, ctx, `[...document.querySelectorAll('.strip button')].findIndex(b => b.getAttribute('aria-current') === 'step')`, false); cur != i {
			t.Fatalf("after %d Enters the strip is at stage %d (%s)", i, cur, label)
		}
		announced(t, ctx, "student", fmt.Sprintf("Stage %d of %d:", i+1, stages))
		if i == 1 {
			said := liveRegion(t, ctx)
			t.Logf("the accessibility tree's live region after a Step: %q", said)
			if !strings.HasPrefix(said, fmt.Sprintf("Stage 2 of %d: %s", stages, label)) {
				t.Errorf("after a Step the live region says %q, want it to name stage 2, %s", said, label)
			}
		}
	}
	if s := attr(t, ctx, "#state", "data-token-step"); s != "1" {
		t.Errorf("Enter through the stages left the first token (token step %s)", s)
	}

	// the pipeline strip: one tab stop, arrow keys inside, Enter goes there
	w.tabs = 0
	toStrip := w.tabTo(`.strip button`, 12)
	t.Logf("Tabs from Step → to the pipeline strip: %d (the strip's %d stages are one tab stop)", toStrip, stages)
	w.key(kb.Home)
	w.mustBeAt(`.strip button[data-goto-stage="tokenize"]`, "Home on the strip")
	for i := 0; i < stages && !w.at(`.strip button[data-goto-stage="softmax"]`); i++ {
		w.key(kb.ArrowRight)
	}
	w.after(kb.Enter, "the softmax chip", `document.querySelector('[data-current-stage]').dataset.currentStage === "softmax"`, `.strip button[data-goto-stage="softmax"]`)
	if n := eval[int](t, ctx, `document.querySelectorAll('.strip button[tabindex="0"]').length`, false); n != 1 {
		t.Errorf("the strip has %d tab stops, want 1", n)
	}
	announced(t, ctx, "student", "softmax; at T = 0.80")
	t.Logf("the accessibility tree's live region at softmax: %q", liveRegion(t, ctx))

	// the sliders: three notches each by arrow keys
	w.tabs = 0
	toSlider := w.tabTo(`input[name="view_temperature"]`, 20)
	t.Logf("Tabs from the strip to the temperature slider: %d", toSlider)
	for _, s := range []struct {
		name, key, attr, say string
		step                 float64
	}{
		{"view_temperature", kb.ArrowRight, "data-chain-t", "at T = %.2f and top-p", 0.05},
		{"view_top_p", kb.ArrowLeft, "data-top-p", "and top-p %.2f the sampler chain keeps", -0.01},
	} {
		sel := fmt.Sprintf(`input[name=%q]`, s.name)
		if s.name == "view_top_p" {
			w.tabTo(sel, 3)
		}
		for notch := 1; notch <= 3; notch++ {
			before := eval[float64](t, ctx, `Number(document.querySelector('`+sel+`').value)`, false)
			want := strconv.FormatFloat(before+s.step, 'f', 2, 64)
			w.after(s.key, fmt.Sprintf("%s notch %d", s.name, notch),
				fmt.Sprintf(`Number(document.querySelector('[data-testid="nucleus"]').getAttribute(%q)).toFixed(2) === %q`, s.attr, want), sel)
			if v := eval[string](t, ctx, `Number(document.querySelector('`+sel+`').value).toFixed(2)`, false); v != want {
				t.Errorf("%s after notch %d: %s, want %s", s.name, notch, v, want)
			}
			if st := attr(t, ctx, "[data-current-stage]", "data-current-stage"); st != "softmax" {
				t.Fatalf("%s notch %d left the softmax stage for %s", s.name, notch, st)
			}
			nucleus := eval[string](t, ctx, `document.querySelector('[data-testid="nucleus"]').textContent.replace(/\s+/g, ' ')`, false)
			kept := attr(t, ctx, `[data-testid="nucleus"]`, "data-kept")
			if !strings.Contains(nucleus, "keeps") || !strings.Contains(nucleus, kept+" token") {
				t.Errorf("%s notch %d: the nucleus sentence %q does not say it keeps %s tokens", s.name, notch, nucleus, kept)
			}
			v, _ := strconv.ParseFloat(want, 64)
			announced(t, ctx, "student", fmt.Sprintf(s.say, v))
			announced(t, ctx, "student", "keeps "+kept+" token")
		}
	}

	// a head from the thumbnails, switched off and on
	w.tabTo(`.strip button`, 30)
	for i := 0; i < stages && !w.at(`.strip button[data-goto-stage="attention"]`); i++ {
		w.key(kb.ArrowLeft)
	}
	w.after(kb.Enter, "layer 1's attention", `document.querySelector('[data-current-stage]').dataset.currentStage === "attention"`, `.strip button[data-goto-stage="attention"]`)
	w.tabs = 0
	toHeads := w.tabTo(`[data-testid="head-thumb"]`, 30)
	t.Logf("Tabs from the strip to the head thumbnails: %d (one tab stop for %d heads)", toHeads, eval[int](t, ctx, `document.querySelectorAll('[data-testid="head-thumb"]').length`, false))
	w.key(kb.ArrowRight)
	w.mustBeAt(`[data-testid="head-thumb"][data-head="1"]`, "→ in the head thumbnails")
	w.after(kb.Enter, "head 2", `document.querySelector('[data-stage="attention"] h2').dataset.head === "1"`, `[data-testid="head-thumb"][data-head="1"]`)
	w.tabs = 0
	toIntervene := w.tabTo(`[data-testid="intervene-head"]`, 30)
	t.Logf("Shift+Tabs from head 2 to its Intervene button: %d", toIntervene)
	w.after(kb.Enter, "head 2 switched off", `document.querySelector('[data-testid="intervene-head"]').getAttribute('aria-pressed') === "true"`, `[data-testid="intervene-head"]`)
	announced(t, ctx, "student", "head 2 of")
	announced(t, ctx, "student", "(switched off)")
	w.after(" ", "head 2 switched back on", `document.querySelector('[data-testid="intervene-head"]').getAttribute('aria-pressed') === "false"`, `[data-testid="intervene-head"]`)
	screenshot(t, ctx, "keyboard-explorer")
}

// The single-key shortcuts act on the page and the stage region, never
// on a control (Space presses a focused button, → moves a focused slider),
// and the visible setting turns them off, aria-keyshortcuts with them.
func TestShortcutsOnlyOffControls(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	do(t, ctx, chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(base+"/?"+url.Values{"prompt": {"The capital of France is"}, "seed": {"1"}}.Encode()),
		chromedp.WaitVisible(chromedp.CSS(`[data-stage="tokenize"]`)))
	w := newKeyWalk(t, ctx, "viewer")
	stage := `document.querySelector('[data-current-stage]').dataset.currentStage`
	w.tabTo(`[data-testid="skip-to-stage"]`, 1)
	w.key(kb.Enter)
	w.mustBeAt(`#stage`, "the skip link to the stage")
	w.after(kb.ArrowRight, "→ on the stage region", stage+` === "embed"`, `#stage`)
	// the model map's parts: one tab stop (the part the viewer is at),
	// arrow keys inside, Enter goes there
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="model-map"] g.part[tabindex="0"]').length`, false); n != 1 {
		t.Errorf("the model map has %d tab stops, want 1", n)
	}
	w.tabTo(`[data-testid="model-map"] g.part`, 3)
	w.mustBeAt(`[data-testid="map-embed"]`, "Tab into the model map")
	w.key(kb.ArrowRight)
	w.mustBeAt(`[data-testid="map-attention-1"]`, "→ in the model map")
	w.after(kb.Enter, "Enter on layer 1's attention", stage+` === "attention"`, `[data-testid="map-attention-1"]`)
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="model-map"] g.part[tabindex="0"]').length`, false); n != 1 {
		t.Errorf("after Enter the model map has %d tab stops, want 1", n)
	}
	// Space on a focused button presses it: Step →, not play
	w.tabTo(`#action-step`, 20)
	w.after(" ", "Space on Step →", stage+` === "mlp"`, `#action-step`)
	if p := eval[string](t, ctx, `document.body.dataset.playing || ""`, false); p == "true" {
		t.Error("Space on Step → started play")
	}
	// → and n on a button do not step
	w.key(kb.ArrowRight)
	w.key("n")
	time.Sleep(500 * time.Millisecond) // a step would be back by now
	if s := eval[string](t, ctx, stage, false); s != "mlp" {
		t.Errorf("→ and n on the focused Step → button moved the stage to %s", s)
	}
	// the setting turns the shortcuts off (and aria-keyshortcuts), for good
	w.tabTo(`[data-testid="shortcuts"]`, 60)
	w.key(" ")
	if on := eval[bool](t, ctx, `document.querySelector('[data-testid="shortcuts"]').checked`, false); on {
		t.Fatal("Space did not turn the shortcuts setting off")
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('[aria-keyshortcuts]').length`, false); n != 0 {
		t.Errorf("shortcuts off, %d elements still claim aria-keyshortcuts", n)
	}
	do(t, ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#action-step`)))
	t.Logf("Tabs from the top to Step → without the skip links: %d", w.tabTo(`#action-step`, 80))
	do(t, ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#action-step`)))
	w.tabTo(`[data-testid="skip-to-stage"]`, 1)
	w.key(kb.Enter)
	t.Logf("Tabs from the stage region (the first link) to Step →: %d", w.tabTo(`#action-step`, 20))
	do(t, ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#action-step`)))
	w.tabTo(`[data-testid="skip-to-stage"]`, 1)
	w.key(kb.Enter)
	w.key(kb.ArrowRight)
	w.key("n")
	time.Sleep(500 * time.Millisecond)
	if s := eval[string](t, ctx, stage, false); s != "mlp" {
		t.Errorf("shortcuts off: → and n on the stage moved it to %s", s)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('[aria-keyshortcuts]').length`, false); n != 0 {
		t.Errorf("shortcuts off after a reload: %d elements claim aria-keyshortcuts", n)
	}
	// a glossary term's sentence closes on Escape, focus staying on it
	w.tabTo(`dfn.term`, 60)
	box := `getComputedStyle(document.activeElement, '::after').display`
	if d := eval[string](t, ctx, box, false); d == "none" {
		t.Fatal("a focused term shows no sentence")
	}
	w.key(kb.Escape)
	if d := eval[string](t, ctx, box, false); d != "none" {
		t.Errorf("Escape left the term's sentence shown (display %s)", d)
	}
	w.mustBeAt(`dfn.term`, "Escape on a term")
}

// A lesson's question answered by keyboard: Tab to the choices, Space
// picks one, Space on Answer sends it, and the page that answers puts
// focus on the verdict.
func TestLessonQuestionByKeyboard(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	do(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/lessons/logits-and-softmax"),
		chromedp.WaitVisible(chromedp.CSS(`[data-action="step"]`)))
	w := newKeyWalk(t, ctx, "learner")
	w.tabTo(`a[data-action="step"]`, 60)
	do(t, ctx, chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(chromedp.CSS(`[data-testid="question"]`)))
	n := w.tabTo(`[data-testid="question"] input[type="radio"]`, 40)
	t.Logf("Tabs from the top of the question's page to its first choice: %d", n)
	w.key(kb.ArrowDown) // the second choice
	w.key(kb.ArrowUp)   // back to the first: " Par"
	if v := eval[string](t, ctx, `document.querySelector('[data-testid="question"] input:checked')?.value || ""`, false); v != " Par" {
		t.Fatalf("the arrow keys chose %q", v)
	}
	w.tabTo(`[data-testid="question"] button[type="submit"]`, 3)
	do(t, ctx, chromedp.KeyEvent(" "), chromedp.WaitVisible(chromedp.CSS(`[data-testid="feedback"]`)))
	waitJS(t, ctx, "focus on the verdict", `document.activeElement?.dataset.testid === "feedback"`)
	if c := attr(t, ctx, `[data-testid="feedback"]`, "data-correct"); c != "true" {
		t.Errorf("the answer \" Par\" judged %s", c)
	}
}

// Joining a room and answering its poll by keyboard; the room's
// projector view's join panel keeps focus inside while open and closes
// on Escape, focus back on its summary.
func TestJoinAndAnswerByKeyboard(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	code, key := startRoom(t, base, url.Values{"lesson": {"logits-and-softmax"}})
	teach := dialRoom(t, base, code, "key="+key)
	teach.wait(`id="teach-extras"`)
	teach.send(map[string]string{"action": "lesson-step", "to": "1"})
	teach.wait(`data-lesson-step="1"`)

	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/classroom"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="join-input"]`)))
	w := newKeyWalk(t, ctx, "student")
	t.Logf("Tabs to the join code: %d", w.tabTo(`[data-testid="join-input"]`, 30))
	do(t, ctx, chromedp.KeyEvent(strings.ToLower(code)+kb.Enter), chromedp.WaitVisible(chromedp.CSS(`[data-testid="poll-option"]`)))
	w.tabs = 0
	n := w.tabTo(`[data-testid="poll-option"][data-answer=" Par"]`, 40)
	t.Logf("Tabs from the top of the student's page to the poll's first choice: %d", n)
	w.after(kb.Enter, "the answer confirmed", `document.querySelector('[data-testid="poll-mine"] code')?.textContent === " Par"`, `[data-testid="poll-option"][data-answer=" Par"]`)
	announced(t, ctx, "student", "Your answer: Par")
	teach.wait(`data-testid="answered">1<`)
	// exploring on one's own and back: the button changes, focus stays on it
	state := `document.querySelector('[data-testid="follow-state"]').dataset.state`
	w.tabTo(`#follow-toggle`, 20)
	w.after(kb.Enter, "exploring", state+` === "exploring" && !!document.querySelector('#room-main #explorer')`, `#follow-toggle[data-action="rejoin"]`)
	w.after(kb.Enter, "following again", state+` === "following" && !!document.querySelector('#room-view')`, `#follow-toggle[data-action="explore"]`)

	// the projector's join panel: a trap while open, Escape closes it
	do(t, ctx, chromedp.EmulateViewport(1280, 720), chromedp.Navigate(base+"/rooms/"+code+"/projector"), chromedp.WaitVisible(chromedp.CSS(`#room-view`)))
	p := newKeyWalk(t, ctx, "projector")
	p.tabTo(`[data-testid="projector-join"] summary`, 20)
	p.key(kb.Enter)
	if !eval[bool](t, ctx, `document.querySelector('[data-testid="projector-join"]').open`, false) {
		t.Fatal("Enter did not open the join panel")
	}
	inside := `document.querySelector('[data-testid="projector-join"]').contains(document.activeElement)`
	for i := 0; i < 6; i++ {
		p.key(kb.Tab)
		if !eval[bool](t, ctx, inside, false) {
			t.Fatalf("Tab %d left the open join panel for %s", i+1, p.focused())
		}
	}
	p.key(kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift))
	if !eval[bool](t, ctx, inside, false) {
		t.Fatalf("Shift+Tab left the open join panel for %s", p.focused())
	}
	p.key(kb.Escape)
	waitJS(t, ctx, "the join panel to close on Escape", `!document.querySelector('[data-testid="projector-join"]').open`)
	p.mustBeAt(`[data-testid="projector-join"] summary`, "Escape on the join panel")
}

// An instructor teaches by keyboard — a lesson step with a poll, the
// reveal, stages and the next lesson step — while two students answer by
// keyboard: the instructor's focus is never moved by the answers, the
// students' never lost to the instructor's steps, and each step, answer
// and reveal is said by the live region.
func TestTeachingByKeyboard(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	code, key := startRoom(t, base, url.Values{"lesson": {"logits-and-softmax"}})
	do(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/rooms/"+code+"/teach?key="+key),
		chromedp.WaitVisible(chromedp.CSS(`[data-action="lesson-next"]`)))
	teacher := newKeyWalk(t, ctx, "instructor")
	var students []*keyWalk
	for i, answer := range []string{" Par", " L"} {
		sctx, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		do(t, sctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/rooms/"+code), chromedp.WaitVisible(chromedp.CSS(`#room-view`)))
		s := newKeyWalk(t, sctx, fmt.Sprintf("student %d (answers %q)", i+1, answer))
		students = append(students, s)
	}
	waitJS(t, ctx, "two students", `document.querySelector('[data-testid="class-count"]').dataset.connected === "2"`)
	// each student puts focus somewhere in the class's view
	for _, s := range students {
		s.tabTo(`#room-view a[href], #room-view button, #room-view dfn.term, #room-view summary`, 40)
		s.t.Logf("%s: focus on %s", s.who, s.focused())
	}
	following := func(what, js string) {
		t.Helper()
		for _, s := range students {
			waitJS(t, s.ctx, s.who+": "+what, js)
			s.notLost("after the instructor's " + what)
		}
	}

	// lesson step 2: the poll
	t.Logf("instructor: Tabs to “Next lesson step”: %d", teacher.tabTo(`[data-action="lesson-next"]`, 40))
	teacher.after(kb.Enter, "lesson step 2", `document.querySelector('#room-view').dataset.lessonStep === "1"`, `[data-action="lesson-next"]`)
	following("lesson step 2", `document.querySelector('#room-view').dataset.lessonStep === "1"`)
	for _, s := range students {
		announced(t, s.ctx, s.who, "Lesson step 2 of")
		announced(t, s.ctx, s.who, "Question: Which token will score highest?")
	}
	teacher.tabTo(`[data-action="reveal"]`, 3)

	// the students answer; the instructor's focus stays on Reveal
	for i, answer := range []string{" Par", " L"} {
		s := students[i]
		sel := fmt.Sprintf(`[data-testid="poll-option"][data-answer=%q]`, answer)
		t.Logf("%s: Tabs to the choice: %d", s.who, s.tabTo(sel, 40))
		keyName := kb.Enter
		if i == 1 {
			keyName = " " // Space presses a button too
		}
		s.after(keyName, "the answer confirmed", fmt.Sprintf(`document.querySelector('[data-testid="poll-mine"] code')?.textContent === %q`, answer), sel)
		announced(t, s.ctx, s.who, "Your answer:"+answer)
		waitJS(t, ctx, "the instructor to see the answer", fmt.Sprintf(`document.querySelector('[data-testid="answered"]')?.textContent === "%d"`, i+1))
		teacher.mustBeAt(`[data-action="reveal"]`, fmt.Sprintf("%d students answered", i+1))
	}

	// the reveal
	teacher.after(kb.Enter, "the reveal", `!!document.querySelector('#room-view [data-testid="reveal"]')`, `[data-testid="reveal"]`)
	following("reveal", `!!document.querySelector('#room-view [data-testid="reveal"]')`)
	for _, s := range students {
		s.mustBeAt(`[data-testid="reveal"]`, "the reveal took the poll's buttons away")
		announced(t, s.ctx, s.who, `Revealed:`)
	}
	announced(t, students[0].ctx, students[0].who, "matches the engine's answer")

	// two stages with Stage →, Enter twice, then the next lesson step
	t.Logf("instructor: Shift+Tabs from the reveal to Stage →: %d", teacher.tabTo(`#action-step`, 20))
	for i := 0; i < 2; i++ {
		v := attr(t, ctx, "#room-view", "data-version")
		moved := fmt.Sprintf(`document.querySelector('#room-view').dataset.version !== %q`, v)
		teacher.after(kb.Enter, fmt.Sprintf("Stage → %d", i+1), moved, `#action-step`)
		stage := attr(t, ctx, "#room-view", "data-current-stage")
		following(fmt.Sprintf("Stage → %d", i+1), fmt.Sprintf(`document.querySelector('#room-view').dataset.currentStage === %q`, stage))
		for _, s := range students {
			s.mustBeAt(`[data-testid="reveal"]`, "the instructor's Stage →")
			line := eval[string](t, s.ctx, `document.querySelector('#room-view').dataset.announce.split("\n").pop()`, false)
			announced(t, s.ctx, s.who, line)
			if said := liveRegion(t, s.ctx); !strings.Contains(said, line) {
				t.Errorf("%s: after the instructor's Stage → the accessibility tree's live region says %q, want %q", s.who, said, line)
			} else if i == 0 {
				t.Logf("%s: the accessibility tree's live region after the instructor's Stage →: %q", s.who, said)
			}
		}
	}
	teacher.tabTo(`[data-action="lesson-next"]`, 20)
	// the lesson's last step: “Next lesson step” is disabled, focus goes to
	// the new step's title
	teacher.after(kb.Enter, "lesson step 3", `document.querySelector('#room-view').dataset.lessonStep === "2"`, `#room-view > h2`)
	following("lesson step 3", `document.querySelector('#room-view').dataset.lessonStep === "2"`)
	for _, s := range students {
		s.mustBeAt(`#room-view > h2`, "the next lesson step")
		announced(t, s.ctx, s.who, "Lesson step 3 of")
		t.Logf("%s: focus after three instructor steps on %s; %d Tabs in all", s.who, s.focused(), s.tabs)
	}
	t.Logf("instructor: %d Tabs in all", teacher.tabs)
}

// The tour says each stage and its sentence in the page's live region (its
// caption is not a second one), and Escape closes the caption.
func TestTourByKeyboard(t *testing.T) {
	ctx, base, _ := browserServer(t, Config{Embedded: lessonModels()})
	do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="tour"]`)))
	href := attr(t, ctx, `[data-testid="tour"]`, "href")
	do(t, ctx, chromedp.Navigate(base+href), chromedp.WaitVisible(chromedp.CSS(`[data-testid="tour-caption"]`)))
	waitJS(t, ctx, "the tour to step to embed", `document.querySelector('[data-current-stage]').dataset.currentStage === "embed"`)
	announced(t, ctx, "tour", "Stage 2 of")
	announced(t, ctx, "tour", views.Glossary["embedding"])
	said := liveRegion(t, ctx)
	t.Logf("the live region on the tour's second stage: %q", said)
	w := newKeyWalk(t, ctx, "tour")
	w.tabTo(`[data-testid="skip-to-stage"]`, 1)
	w.key(kb.Enter)
	w.key(kb.Escape)
	if eval[bool](t, ctx, `!!document.querySelector('[data-testid="tour-caption"]')`, false) {
		t.Error("Escape left the tour's caption on the page")
	}
	w.mustBeAt(`#stage`, "Escape on the tour")
}

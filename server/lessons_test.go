package server

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"stepthrough/lessons"
	"stepthrough/present"
	"stepthrough/session"
)

// Every step of every built-in lesson plays on the embedded lesson model:
// the page shows the step's stage, no error, and links onward.
func TestBuiltinLessonsPlay(t *testing.T) {
	s := mustNew(t, Config{Embedded: lessonModels()})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	list := get(t, ts.URL+"/lessons")
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if n := list.Find(`[data-testid="lesson"]`).Length(); n != len(all) {
		t.Fatalf("lesson list shows %d lessons, want %d", n, len(all))
	}
	for _, name := range lessons.Names(all) {
		l := all[name]
		for i, st := range l.Steps {
			doc := get(t, fmt.Sprintf("%s/lessons/%s?step=%d", ts.URL, name, i))
			if e := doc.Find(`[data-testid="error"]`); e.Length() > 0 {
				t.Fatalf("%s step %d: error %q", name, i+1, e.Text())
			}
			predict := st.Question != nil && !st.PanelShown // the numbers wait for the answer
			if st.Question == nil && doc.Find(`a[data-testid="explore-step"]`).Length() != 1 {
				t.Errorf("%s step %d: no Explorer link", name, i+1)
			}
			if predict {
				// the engine's numbers would give the answer away
				if doc.Find(`section[data-stage]`).Length() != 0 || doc.Find(`[data-testid="panel-hidden"]`).Length() != 1 {
					t.Errorf("%s step %d: the panel shows before the prediction", name, i+1)
				}
			} else if got, _ := doc.Find(`section[data-stage]`).Attr("data-stage"); got != st.Stage {
				t.Errorf("%s step %d: stage %q, want %q", name, i+1, got, st.Stage)
			}
			if got, _ := doc.Find(`[data-testid="lesson-step"]`).Attr("data-step"); got != fmt.Sprint(i) {
				t.Errorf("%s step %d: data-step %q", name, i+1, got)
			}
			if (i+1 < len(l.Steps)) != (doc.Find(`a[data-action="step"]`).Length() == 1) {
				t.Errorf("%s step %d: next link wrong", name, i+1)
			}
			if i+1 == len(l.Steps) { // the last step leads on to the next lesson in order
				names := lessons.Names(all)
				want := "/lessons"
				if k := slices.Index(names, name); k+1 < len(names) {
					want = "/lessons/" + names[k+1]
				}
				next := doc.Find(`a[data-testid="next-lesson"]`)
				if href, _ := next.Attr("href"); href != want || (want != "/lessons" && !strings.Contains(next.Text(), "Next lesson: "+all[names[slices.Index(names, name)+1]].Title)) {
					t.Errorf("%s's last step: next lesson link %q (%q), want %s", name, href, next.Text(), want)
				}
			}
			if strings.Contains(st.Narration, "Serving page") && doc.Find(`a[data-testid="page-link"][href="/serving"]`).Length() == 0 {
				t.Errorf("%s step %d names the Serving page without linking it", name, i+1)
			}
			if !predict && len(st.Highlight) > 0 {
				hl := doc.Find(`[data-testid="highlight"] [data-token-id]`)
				if hl.Length() != len(st.Highlight) {
					t.Errorf("%s step %d: %d highlighted tokens, want %d", name, i+1, hl.Length(), len(st.Highlight))
				}
				// the highlighted token must be one the panel shows
				id, _ := hl.First().Attr("data-token-id")
				if doc.Find(`section.panel [data-token-id="`+id+`"]`).Length() == 0 {
					t.Errorf("%s step %d: highlighted token %s is not in the panel", name, i+1, id)
				}
			}
			if q := st.Question; q != nil {
				if doc.Find(`[data-testid="question"]`).Length() != 1 {
					t.Fatalf("%s step %d: question missing", name, i+1)
				}
				if doc.Find(`[data-testid="after-answer"]`).Length() != 0 {
					t.Errorf("%s step %d: the text after the question shows before it is answered", name, i+1)
				}
				// the Explorer would show the step's numbers (and let the student step on to the answer)
				if doc.Find(`[data-testid="explore-step"]`).Length() != 0 || doc.Find(`[data-testid="explore-after-answer"]`).Length() != 1 {
					t.Errorf("%s step %d: the Explorer link shows before the question is answered", name, i+1)
				}
				right, wrong := expectedAnswers(t, s, l, i)
				for _, a := range []struct {
					ans  string
					want string
				}{{right, "true"}, {wrong, "false"}} {
					page := get(t, fmt.Sprintf("%s/lessons/%s?step=%d&answer=%s", ts.URL, name, i, url.QueryEscape(a.ans)))
					fb := page.Find(`[data-testid="feedback"]`)
					if fb.Length() != 1 || fb.Text() == "" {
						t.Fatalf("%s step %d: no feedback after answering", name, i+1)
					}
					if got, _ := page.Find(`section[data-stage]`).Attr("data-stage"); got != st.Stage {
						t.Errorf("%s step %d: after answering, stage %q, want %q", name, i+1, got, st.Stage)
					}
					if st.After != "" && !strings.Contains(page.Find(`[data-testid="after-answer"]`).Text(), strings.Fields(st.After)[0]) {
						t.Errorf("%s step %d: the text after the question is missing once it is answered", name, i+1)
					}
					if page.Find(`a[data-testid="explore-step"]`).Length() != 1 {
						t.Errorf("%s step %d: no Explorer link once answered", name, i+1)
					}
					if c, _ := fb.Attr("data-correct"); c != a.want {
						t.Errorf("%s step %d (%s): answer %q marked %q, want %s", name, i+1, q.Kind, a.ans, c, a.want)
					}
				}
			}
		}
	}
	// The seeds lesson claims two seeds draw different tokens and that a
	// seed repeats its draw; the engine must agree.
	tok := func(step int) string {
		v, _ := get(t, fmt.Sprintf("%s/lessons/seeds?step=%d", ts.URL, step)).Find(`[data-testid="sampled-token"]`).Attr("data-token-id")
		return v
	}
	if a, b := tok(0), tok(1); a == "" || a == b || tok(0) != a {
		t.Errorf("seeds lesson: seed 1 drew %q, seed 2 drew %q; want different, repeatable draws", a, b)
	}
	// Hostile or odd requests answer without panicking: no such step.
	getStatus(t, ts.URL+"/lessons/logits-and-softmax?step=-5", http.StatusNotFound)
	getStatus(t, ts.URL+"/lessons/logits-and-softmax?step=99999999999999999999", http.StatusNotFound)
}

// A student opens the lessons page in a real browser, starts a lesson,
// answers a question, reads the engine's answer and moves on.
func TestLessonPlayerInBrowser(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	do(t, ctx, chromedp.Navigate(base+"/"))
	click(t, ctx, `a[href="/lessons"]`)
	click(t, ctx, `a[href="/lessons/logits-and-softmax"]`)
	if got := attr(t, ctx, `[data-testid="lesson-step"]`, "data-step"); got != "0" {
		t.Fatalf("lesson opened at step %q", got)
	}
	click(t, ctx, `a[data-action="step"]`)
	waitChange(t, ctx, `[data-testid="lesson-step"]`, "data-step", "0")
	// A prediction: the engine's numbers wait for the answer.
	if n := eval[int](t, ctx, `document.querySelectorAll('section[data-stage]').length`, false); n != 0 {
		t.Fatal("the logits show before the student predicts")
	}
	click(t, ctx, `input[name="answer"][value=" Par"]`)
	click(t, ctx, `[data-testid="question"] button[type="submit"]`)
	if got := attr(t, ctx, `section[data-stage]`, "data-stage"); got != "logits" {
		t.Fatalf("after answering, step 2 shows %q, want logits", got)
	}
	if got := attr(t, ctx, `[data-testid="feedback"]`, "data-correct"); got != "true" {
		t.Errorf("answering \" Par\" was marked %q", got)
	}
	text := eval[string](t, ctx, `document.querySelector('[data-testid="feedback"]').textContent`, false)
	top := attr(t, ctx, `[data-testid="logit"]`, "data-token-id")
	if !strings.Contains(text, "(id "+top+")") {
		t.Errorf("feedback %q does not name the engine's token", text)
	}
	// Progress is in the URL: a reload stays on this step.
	url := eval[string](t, ctx, `location.href`, false)
	if !strings.HasSuffix(strings.SplitN(url, "?", 2)[0], "/lessons/logits-and-softmax/2") {
		t.Errorf("URL %q does not keep the step", url)
	}
	screenshot(t, ctx, "lesson-player")

	// Handouts: printed, the stage is black on white without controls.
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"})
		return err
	}))
	got := eval[[]string](t, ctx, `[getComputedStyle(document.body).backgroundColor,
		getComputedStyle(document.querySelector('header')).display,
		getComputedStyle(document.querySelector('.controls')).display,
		getComputedStyle(document.querySelector('section[data-stage]')).display]`, false)
	if want := []string{"rgb(255, 255, 255)", "none", "none", "block"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("print styles: body background, header, controls, panel = %q, want %q", got, want)
	}
}

// expectedAnswers computes, from the engine's own trace of lesson step i
// (not from the server's judging code), an answer that must be marked
// right and one that must be marked wrong.
func expectedAnswers(t *testing.T, s *Server, l *lessons.Lesson, i int) (right, wrong string) {
	t.Helper()
	q := l.Steps[i].Question
	if q.Kind == "choice" {
		for _, c := range q.Choices {
			if c != q.Answer {
				return q.Answer, c
			}
		}
		t.Fatalf("step %d: a choice question with one choice", i+1)
	}
	se := session.New("expect", "test", s.reg)
	defer se.Close()
	if err := se.PlayLesson(context.Background(), l, i); err != nil {
		t.Fatal(err)
	}
	tr, tk, ok := se.Current()
	if !ok {
		t.Fatalf("step %d: no trace", i+1)
	}
	logits := tr.Logits.Logits
	order := make([]int, len(logits))
	for j := range order {
		order[j] = j
	}
	sort.Slice(order, func(a, b int) bool { return logits[order[a]] > logits[order[b]] })
	switch q.Kind {
	case "next-token":
		return string(tk.Bytes(int32(order[0]))), string(tk.Bytes(int32(order[1])))
	case "probability":
		var z float64
		for _, x := range logits {
			z += math.Exp(float64(x - logits[order[0]]))
		}
		p := 1 / z
		off := p + 0.3
		if off > 1 {
			off = p - 0.3
		}
		return fmt.Sprintf("%.2f", p), fmt.Sprintf("%.2f", off)
	case "survivors":
		for _, x := range tr.Sampler {
			if x.Step == "top-p" {
				return fmt.Sprint(x.AfterCount), fmt.Sprint(x.AfterCount + 5)
			}
		}
		t.Fatalf("step %d: a survivors question without a top-p step", i+1)
	}
	t.Fatalf("step %d: question kind %q", i+1, q.Kind)
	return "", ""
}

// A choice question shows the step's prompt, hides the numbers until
// answered, and after a wrong answer marks the student's pick and the
// right one.
func TestChoiceQuestionMarksThePick(t *testing.T) {
	s := mustNew(t, Config{Embedded: lessonModels()})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	q := all["logits-and-softmax"].Steps[2].Question
	if q == nil || q.Kind != "choice" {
		t.Fatal("logits-and-softmax step 3 is no longer a choice question")
	}
	wrong := ""
	for _, c := range q.Choices {
		if c != q.Answer {
			wrong = c
		}
	}
	doc := get(t, ts.URL+"/lessons/logits-and-softmax?step=2")
	if doc.Find(`[data-testid="question-prompt"] code`).Length() != 1 || doc.Find(`section[data-stage]`).Length() != 0 || doc.Find(`input[name="view_temperature"]`).Length() != 0 {
		t.Error("before the answer: want the prompt shown, no panel and no slider")
	}
	doc = get(t, ts.URL+"/lessons/logits-and-softmax?step=2&answer="+url.QueryEscape(wrong))
	picked := doc.Find(`label.picked.wrong[data-testid="choice"] input[value="` + wrong + `"]`)
	right := doc.Find(`label.right[data-testid="choice"] input[value="` + q.Answer + `"]`)
	if picked.Length() != 1 || right.Length() != 1 || doc.Find(`section[data-stage="softmax"]`).Length() != 1 {
		t.Errorf("after a wrong answer: picked %d, right %d, panel %d", picked.Length(), right.Length(), doc.Find(`section[data-stage="softmax"]`).Length())
	}
}

// No lesson step gives away the next step's answer: where a step asks
// for the next token, the step before it does not show that token in the
// generated text.
func TestLessonsDoNotSpoilTheNextQuestion(t *testing.T) {
	s := mustNew(t, Config{Embedded: lessonModels()})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	pairs := 0
	for _, name := range lessons.Names(all) {
		l := all[name]
		for i := 1; i < len(l.Steps); i++ {
			q := l.Steps[i].Question
			if q == nil || q.Kind != "next-token" || l.Steps[i-1].Token != l.Steps[i].Token || l.Steps[i-1].Run.Prompt != l.Steps[i].Run.Prompt {
				continue
			}
			right, _ := expectedAnswers(t, s, l, i)
			pairs++
			before := get(t, fmt.Sprintf("%s/lessons/%s?step=%d", ts.URL, name, i-1))
			gen := before.Find(`.generated [data-testid="generated-token"]`)
			if gen.Length() > 0 && strings.Contains(gen.Last().Text(), strings.TrimSpace(right)) && strings.TrimSpace(right) != "" {
				t.Errorf("%s step %d shows %q, the answer to step %d's question", name, i, gen.Last().Text(), i+1)
			}
		}
	}
	if pairs == 0 {
		t.Fatal("no next-token question follows a step on the same token step")
	}
	t.Logf("%d question steps checked against the step before", pairs)
}

// TestUnknownLessonIsAPage: a lesson name that does not exist answers 404
// with the site's page (navigation, the name, a way to the list), not a bare
// line of text.
func TestUnknownLessonIsAPage(t *testing.T) {
	_, ts := testServer(t)
	doc := getStatus(t, ts.URL+"/lessons/no-such-lesson", 404)
	if got := doc.Find(`[data-testid="error"] code`).Text(); got != "no-such-lesson" {
		t.Errorf("error names %q", got)
	}
	if href, _ := doc.Find(`[data-testid="lesson-list-link"]`).Attr("href"); href != "/lessons" {
		t.Errorf("list link %q", href)
	}
	if doc.Find("nav a").Length() == 0 {
		t.Error("no site navigation")
	}
}

// Lesson steps are numbered from 1 in their address as on the page
// (/lessons/NAME/2 is "step 2 of 3"); links made before, ?step= from 0,
// still open the same step; a step that does not exist is a 404 saying
// which steps there are, with the way to the first (it used to open the
// first step as if it were the one asked for).
func TestLessonStepAddresses(t *testing.T) {
	_, ts := classServer(t, "")
	for _, tt := range []struct {
		path string
		step string // data-lesson-step on the page, from 0
	}{
		{"/lessons/logits-and-softmax/2", "1"},
		{"/lessons/logits-and-softmax?step=1", "1"},
		{"/lessons/logits-and-softmax/1", "0"},
		{"/lessons/logits-and-softmax", "0"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			doc := get(t, ts.URL+tt.path)
			got, _ := doc.Find(`[data-testid="lesson-step"]`).Attr("data-step")
			if got != tt.step {
				t.Errorf("step %q, want %q", got, tt.step)
			}
		})
	}
	for _, path := range []string{"/lessons/logits-and-softmax/0", "/lessons/logits-and-softmax/99", "/lessons/logits-and-softmax/x", "/lessons/logits-and-softmax?step=99"} {
		t.Run(path, func(t *testing.T) {
			doc := getStatus(t, ts.URL+path, http.StatusNotFound)
			if msg := doc.Find(`[data-testid="error"]`).Text(); !regexp.MustCompile(`has no step .+: its steps are 1 to \d+\.`).MatchString(msg) {
				t.Errorf("the page says %q", msg)
			}
			if href, _ := doc.Find(`[data-testid="lesson-start-link"]`).Attr("href"); href != "/lessons/logits-and-softmax/1" {
				t.Errorf("the way to the first step %q", href)
			}
		})
	}
	doc := get(t, ts.URL+"/lessons/logits-and-softmax/2")
	if next, _ := doc.Find(`a[data-action="step"]`).Attr("href"); next != "/lessons/logits-and-softmax/3" {
		t.Errorf("the next step's link %q", next)
	}
	if action, _ := doc.Find(`[data-testid="question"]`).Attr("action"); action != "/lessons/logits-and-softmax/2" {
		t.Errorf("the answer form goes to %q", action)
	}
}

// A lesson step that switches part of the model off says so beside its
// panel, with the next-token probabilities before and after, once the
// question is answered; a step without interventions (or after "ablate:
// none") shows none.
func TestLessonStepShowsItsInterventions(t *testing.T) {
	_, ts := classServer(t, "")
	const base = "/lessons/the-head-that-copies/"
	for _, tt := range []struct {
		path  string
		edits string // the interventions' heading; "" for none
	}{
		{"3", ""},
		{"4", ""}, // unanswered: the numbers wait for the answer
		{"4?answer=The+model+still+copies+it%2C+less+surely", "Interventions: L4H1"},
		{"5?answer=Almost+none+of+it", "Interventions: L4H1;L4H3"},
		{"6?answer=No%3A+every+answer+goes+through+these+heads", "Interventions: L4H1;L4H3"},
		{"7", ""},
	} {
		t.Run(tt.path, func(t *testing.T) {
			doc := get(t, ts.URL+base+tt.path)
			got := strings.TrimSpace(doc.Find(`[data-testid="edit-effect"] h2`).Text())
			if diff := cmp.Diff(tt.edits, got); diff != "" {
				t.Errorf("interventions heading (-want +got):\n%s", diff)
			}
			if tt.edits != "" && doc.Find(`[data-testid="edit-row"]`).Length() == 0 {
				t.Error("no before/after rows")
			}
		})
	}
}

// "Where the answer lives" shows the patching grid its claims are about:
// a question's grid waits for the answer, then shows every layer and
// position, numbered from 0 as the panels number them, with the corrupted
// prompt's answer and a link to the same two prompts on the Patching
// page; the step without a question shows it at once.
func TestLessonStepShowsThePatchingGrid(t *testing.T) {
	s := mustNew(t, Config{Embedded: lessonModels()})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	l := all["where-the-answer-lives"]
	asked := slices.IndexFunc(l.Steps, func(st lessons.Step) bool { return st.Patch != "" && st.Question != nil })
	shown := slices.IndexFunc(l.Steps, func(st lessons.Step) bool { return st.Patch != "" && st.Question == nil })
	if asked < 0 || shown < 0 {
		t.Fatal("the lesson has no patching step with a question, or none without")
	}
	before := get(t, ts.URL+present.LessonLink("where-the-answer-lives", asked))
	if before.Find(`[data-testid="lesson-patching"]`).Length() != 0 {
		t.Error("the grid shows before the question is answered")
	}
	q := l.Steps[asked].Question
	for _, doc := range []*goquery.Document{
		get(t, ts.URL+present.LessonLink("where-the-answer-lives", asked)+"?answer="+url.QueryEscape(q.Answer)),
		get(t, ts.URL+present.LessonLink("where-the-answer-lives", shown)),
	} {
		grid := doc.Find(`[data-testid="lesson-patching"]`)
		var pos []string
		grid.Find(`[data-testid="patch-pos"]`).Each(func(_ int, p *goquery.Selection) { pos = append(pos, p.Text()) })
		if diff := cmp.Diff([]string{"0", "1", "2", "3", "4", "5", "6", "7"}, pos); diff != "" {
			t.Errorf("the grid's positions (-want +got):\n%s", diff)
		}
		if n := grid.Find(`[data-testid="patch-row"]`).Length(); n != 4 {
			t.Errorf("%d layers in the grid, want 4", n)
		}
		if bad := grid.Find(`[data-testid="patch-bad"]`).Text(); bad != `" T"` {
			t.Errorf("the corrupted prompt's answer %q, want \" T\" (Tokyo)", bad)
		}
		// the cell the step's claim states: after layer 2, position 4 (" F") restores more than 0.3
		cell := grid.Find(`[data-testid="patch-row"][data-layer="2"] td[data-pos="4"]`).Text()
		if v, err := strconv.ParseFloat(strings.TrimSuffix(cell, "%"), 64); err != nil || v <= 30 {
			t.Errorf("layer 2, position 4: %q, want more than 30%%", cell)
		}
		if href := grid.Find(`a[data-testid="patching-link"]`).AttrOr("href", ""); !strings.Contains(href, "corrupt=The+capital+of+Japan+is") || !strings.Contains(href, "clean=The+capital+of+France+is") {
			t.Errorf("the link to the Patching page: %q", href)
		}
	}
}

// "Try this on another model" opens a step's prompt and settings in the
// Explorer on another offered model: every field of the step's Explorer
// link but the model, the lesson's own model not offered, and the
// Explorer answers on the chosen model with that prompt, at the step's
// stage.
func TestTryStepOnAnotherModel(t *testing.T) {
	s := mustNew(t, Config{Embedded: lessonModels()})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	doc := get(t, ts.URL+"/lessons/logits-and-softmax?step=0")
	explore, _ := doc.Find(`a[data-testid="explore-step"]`).Attr("href")
	u, err := url.Parse(explore)
	if err != nil || explore == "" {
		t.Fatalf("no Explorer link (%q, %v)", explore, err)
	}
	form := doc.Find(`form[data-testid="try-other"]`)
	if form.Length() != 1 {
		t.Fatal("no 'Try this on another model' form beside the Explorer link")
	}
	got := url.Values{}
	form.Find(`input[type="hidden"]`).Each(func(_ int, in *goquery.Selection) {
		n, _ := in.Attr("name")
		v, _ := in.Attr("value")
		got.Add(n, v)
	})
	want := u.Query()
	want.Del("model")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the form's fields (-the Explorer link's but the model +form):\n%s", diff)
	}
	if want.Get("stage") == "" {
		t.Fatalf("the Explorer link %q names no stage", explore)
	}
	var models []string
	form.Find(`select[name="model"] option`).Each(func(_ int, o *goquery.Selection) {
		v, _ := o.Attr("value")
		models = append(models, v)
	})
	own := u.Query().Get("model")
	if len(models) == 0 || slices.Contains(models, own) {
		t.Fatalf("offered %v; want the other models, not the lesson's %s", models, own)
	}
	got.Set("model", models[0])
	page := get(t, ts.URL+"/?"+got.Encode())
	if e := page.Find(`[data-testid="error"]`); e.Length() > 0 {
		t.Fatalf("the Explorer on %s: %s", models[0], e.Text())
	}
	if m, _ := page.Find(`select[name="model"] option[selected]`).Attr("value"); m != models[0] {
		t.Errorf("the Explorer runs %q, want %q", m, models[0])
	}
	if p := page.Find(`textarea[name="prompt"]`).Text(); p != want.Get("prompt") {
		t.Errorf("the Explorer's prompt %q, want the step's %q", p, want.Get("prompt"))
	}
	if st, _ := page.Find(`section.panel[data-stage]`).First().Attr("data-stage"); st != want.Get("stage") {
		t.Errorf("the Explorer on %s opens at stage %q, want the step's %q", models[0], st, want.Get("stage"))
	}
	// a question's step offers it only once answered (the Explorer would show the answer)
	for i, st := range mustLesson(t, "logits-and-softmax").Steps {
		if st.Question != nil && get(t, fmt.Sprintf("%s/lessons/logits-and-softmax?step=%d", ts.URL, i)).Find(`[data-testid="try-other"]`).Length() != 0 {
			t.Errorf("step %d offers another model before its question is answered", i+1)
		}
	}
}

func mustLesson(t *testing.T, name string) *lessons.Lesson {
	t.Helper()
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	l, ok := all[name]
	if !ok {
		t.Fatalf("no lesson %s", name)
	}
	return l
}

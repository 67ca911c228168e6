package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"stepthrough/present"
)

func compareURL(base string, n, step int, lanes ...string) string {
	q := url.Values{"prompt": {"Once upon a time"}, "model": {"stories260K.gguf"}, "n": {itoa(n)}, "lane": lanes, "step": {itoa(step)}}
	return base + "/compare?" + q.Encode()
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestComparePage(t *testing.T) {
	_, ts := testServer(t)
	if empty := get(t, ts.URL+"/compare"); !strings.Contains(empty.Find(`[data-testid="compare-empty"]`).Text(), "press Compare") {
		t.Error("the page before a comparison does not say what to do")
	}
	doc := get(t, compareURL(ts.URL, 8, 7, "greedy", "temperature=1.5,top-k=0,top-p=1,min-p=0,seed=2", "beam=3"))
	if n := doc.Find(`[data-testid="lane"]`).Length(); n != 3 {
		t.Fatalf("%d lanes (%s)", n, doc.Find(".error").Text())
	}
	div, _ := doc.Find(`[data-testid="divergence"]`).Attr("data-step")
	if div == "-1" || div == "" {
		t.Errorf("divergence marker %q", div)
	}
	first := doc.Find(`[data-testid="lane"][data-lane-index="0"] [data-testid="lane-token"]`)
	if first.Length() != 8 {
		t.Errorf("lane 1 shows %d tokens at the last step", first.Length())
	}
	if id, _ := first.First().Attr("data-token-id"); id != "432" {
		t.Errorf("greedy lane starts with %s", id)
	}
	if doc.Find(`[data-testid="beam-tree"]`).Length() != 1 {
		t.Error("no beam tree")
	}
	// identical lanes never diverge
	doc = get(t, compareURL(ts.URL, 6, 5, "greedy", "greedy"))
	if d, _ := doc.Find(`[data-testid="divergence"]`).Attr("data-step"); d != "-1" {
		t.Errorf("identical lanes diverge at %s", d)
	}
	// errors are explained
	for _, lanes := range [][]string{{"greedy"}, {"greedy", "beam=99"}, {"greedy", "temperature=0.8"}} {
		doc = getStatus(t, compareURL(ts.URL, 4, 0, lanes...), 400)
		if doc.Find(`[data-testid="error"]`).Length() != 1 {
			t.Errorf("lanes %v: no error shown", lanes)
		}
	}
	// exports
	resp, err := http.Get(strings.Replace(compareURL(ts.URL, 4, 0, "greedy", "beam=2"), "/compare?", "/compare.json?", 1))
	if err != nil {
		t.Fatal(err)
	}
	var res struct{ Lanes []struct{ Tokens []int32 } }
	json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if len(res.Lanes) != 2 || len(res.Lanes[0].Tokens) != 4 {
		t.Errorf("JSON export %+v", res)
	}
	resp, _ = http.Get(strings.Replace(compareURL(ts.URL, 4, 0, "greedy", "beam=2"), "/compare?", "/compare.csv?", 1))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if lines := strings.Split(strings.TrimSpace(string(body)), "\n"); len(lines) != 9 || !strings.HasPrefix(lines[0], "lane,strategy,step") {
		t.Errorf("CSV export:\n%s", body)
	}
}

// The empty form's prompt and lanes, compared on the default model, show
// a difference at the first step: at least two lanes choose different
// first tokens (after "Once upon a time" all four wrote the same).
func TestCompareDefaultsDifferAtTheFirstStep(t *testing.T) {
	ts := httptest.NewServer(mustNew(t, Config{Embedded: lessonModels()}).Handler())
	defer ts.Close()
	form := get(t, ts.URL+"/compare")
	prompt := form.Find(`textarea[name="prompt"], input[name="prompt"]`).First()
	q := url.Values{"prompt": {strings.TrimSpace(prompt.AttrOr("value", prompt.Text()))}, "n": {"4"}, "step": {"0"}}
	form.Find(`input[name="lane"]`).Each(func(_ int, s *goquery.Selection) {
		if v := s.AttrOr("value", ""); v != "" {
			q.Add("lane", v)
		}
	})
	if q.Get("prompt") != present.CompareDefaultPrompt || len(q["lane"]) != len(present.CompareDefaultLanes) {
		t.Fatalf("the empty form offers %v", q)
	}
	doc := get(t, ts.URL+"/compare?"+q.Encode())
	firsts := map[string]bool{}
	doc.Find(`[data-testid="lane"]`).Each(func(_ int, lane *goquery.Selection) {
		id := lane.Find(`[data-testid="lane-token"][data-step="0"]`).AttrOr("data-token-id", "")
		if id == "" {
			t.Errorf("lane %s shows no first token", lane.AttrOr("data-lane-index", "?"))
		}
		firsts[id] = true
	})
	if doc.Find(`[data-testid="lane"]`).Length() != len(present.CompareDefaultLanes) || len(firsts) < 2 {
		t.Errorf("at step 1 the default lanes write %d different first tokens (%v), want at least 2 (%s)", len(firsts), firsts, doc.Find(`[data-testid="error"]`).Text())
	}
	if d := doc.Find(`[data-testid="divergence"]`).AttrOr("data-step", ""); d != "0" {
		t.Errorf("the default lanes diverge at step %q, want 0", d)
	}
}

// A Compare link may steer a lane: the page shows the steered lane beside
// the intact one, its JSON export names the steering, and a steering past
// the model's layers is explained.
func TestCompareSteeredLane(t *testing.T) {
	_, ts := testServer(t)
	u := compareURL(ts.URL, 8, 7, "greedy", "greedy,steer=L2:happy|sad*8")
	doc := get(t, u)
	if n := doc.Find(`[data-testid="lane"]`).Length(); n != 2 {
		t.Fatalf("%d lanes (%s)", n, doc.Find(`[data-testid="error"]`).Text())
	}
	resp, err := http.Get(strings.Replace(u, "/compare?", "/compare.json?", 1))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Lanes []struct {
			Strategy struct{ Steer string }
			Tokens   []int32
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&res)
	resp.Body.Close()
	if err != nil || len(res.Lanes) != 2 {
		t.Fatalf("JSON export: %v %+v", err, res)
	}
	if res.Lanes[1].Strategy.Steer != "L2:happy|sad*8" || slices.Equal(res.Lanes[0].Tokens, res.Lanes[1].Tokens) {
		t.Errorf("steered lane %+v beside intact %+v", res.Lanes[1], res.Lanes[0])
	}
	doc = getStatus(t, compareURL(ts.URL, 4, 0, "greedy", "greedy,steer=L9:happy|sad*8"), 400)
	if msg := doc.Find(`[data-testid="error"]`).Text(); !strings.Contains(msg, "layers 1 to") {
		t.Errorf("steering past the last layer: %q", msg)
	}
}

// In the browser: compare lanes, step them, see the divergence marker and
// the beam tree, reload the shared URL, and follow a branch from the
// Explorer.
func TestCompareInBrowser(t *testing.T) {
	ctx, base := browser(t)
	do(t, ctx,
		chromedp.Navigate(base+"/compare"),
		chromedp.WaitVisible(chromedp.CSS(`button[data-action="compare"]`)),
		chromedp.SetValue(chromedp.CSS(`input[name="n"]`), "8"),
		chromedp.SetValue(chromedp.CSS(`input[name="lane"]:nth-of-type(1)`), "greedy"),
	)
	eval[any](t, ctx, `(() => { const l = document.querySelectorAll('input[name="lane"]'); l[2].value = "temperature=2,top-k=0,top-p=1,min-p=0,seed=5"; return null; })()`, false)
	do(t, ctx,
		chromedp.Click(chromedp.CSS(`button[data-action="compare"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="lane"]`)),
	)
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="lane"]').length`, false); n != 4 {
		t.Fatalf("%d lanes", n)
	}
	// Stepping swaps the lanes in place: the page is not reloaded (a mark
	// on window survives) and the view does not jump (the step link stays
	// where the pointer is, so the next click lands on it).
	eval[any](t, ctx, `(() => { window.stepMark = 1; return null; })()`, false)
	linkTop := `Math.round(document.querySelector('[data-action="step"]').getBoundingClientRect().top)`
	var tops []int
	for i := 0; i < 7; i++ {
		before := attr(t, ctx, "#state", "data-url")
		click(t, ctx, `[data-action="step"]`)
		waitChange(t, ctx, "#state", "data-url", before)
		tops = append(tops, eval[int](t, ctx, linkTop, false))
	}
	if eval[int](t, ctx, `window.stepMark || 0`, false) != 1 {
		t.Error("a step reloaded the whole page instead of swapping the lanes")
	}
	for _, top := range tops[1:] {
		if top != tops[0] {
			t.Errorf("the step link moved as the lanes grew: its top at each step %v", tops)
			break
		}
	}
	if d := attr(t, ctx, `[data-testid="divergence"]`, "data-step"); d == "-1" || d == "" {
		t.Errorf("no divergence marker after 8 steps (%s)", d)
	}
	if eval[int](t, ctx, `document.querySelectorAll('[data-testid="beam-tree"] circle').length`, false) == 0 {
		t.Error("beam tree has no nodes")
	}
	screenshot(t, ctx, "compare")
	url := eval[string](t, ctx, `location.href`, false)
	if !strings.Contains(url, "step=7") {
		t.Errorf("URL %s does not carry the step", url)
	}
	tokens := eval[string](t, ctx, `[...document.querySelectorAll('[data-testid="lane-token"]')].map(e => e.dataset.tokenId).join(" ")`, false)
	do(t, ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`[data-testid="lane"]`)))
	if again := eval[string](t, ctx, `[...document.querySelectorAll('[data-testid="lane-token"]')].map(e => e.dataset.tokenId).join(" ")`, false); again != tokens {
		t.Errorf("reloaded URL shows other tokens:\n%s\n%s", tokens, again)
	}
	// a branch from the Explorer: at the sample stage, force another token
	do(t, ctx,
		chromedp.Navigate(base+"/?prompt=Once+upon+a+time&temperature=1&seed=4&top_k=0&top_p=1&min_p=0&step=0&stage=20"),
		chromedp.WaitVisible(chromedp.CSS(`[data-stage="sample"]`)),
	)
	branch := attr(t, ctx, `[data-testid="branch"]`, "data-token-id")
	click(t, ctx, `[data-testid="branch"]`)
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="lane"]`)))
	lanes := eval[int](t, ctx, `document.querySelectorAll('[data-testid="lane"]').length`, false)
	forced := eval[string](t, ctx, `document.querySelector('[data-testid="lane"][data-lane-index="1"] [data-testid="lane-token"]').dataset.tokenId`, false)
	if lanes != 2 || forced != branch {
		t.Errorf("branch: %d lanes, branch lane starts with %s, want %s", lanes, forced, branch)
	}
	if d := attr(t, ctx, `[data-testid="divergence"]`, "data-step"); d != "0" {
		t.Errorf("branch diverges at %s, want 0", d)
	}
	screenshot(t, ctx, "branch")
}

var _ = goquery.NewDocumentFromReader

// What a new user tripped over in Compare: the drawn token is always
// among a lane's candidates, the beam's choice is text with its path
// marked step by step, a what-if branch is titled in words, and the
// prefill figure never calls a loss a saving.
func TestCompareReadsAsText(t *testing.T) {
	_, ts := testServer(t)
	hot := "temperature=1.5,top-k=0,top-p=1,min-p=0,seed=2"
	for step := range 8 {
		doc := get(t, compareURL(ts.URL, 8, step, "greedy", hot, "beam=3"))
		for _, lane := range []string{"0", "1"} {
			if n := doc.Find(`[data-testid="lane"][data-lane-index="` + lane + `"] [data-testid="lane-candidate"][data-chosen="true"]`).Length(); n != 1 {
				t.Errorf("step %d lane %s: the drawn token is listed %d times among the candidates", step+1, lane, n)
			}
		}
		if n := doc.Find(`[data-testid="beam-node"][data-best="true"]`).Length(); n != step+1 {
			t.Errorf("step %d: %d beam nodes on the chosen path, want one per step", step+1, n)
		}
		if s := doc.Find(`[data-testid="prefill-saving"]`).Text(); strings.Contains(s, "saved -") {
			t.Errorf("a negative saving presented as one: %q", s)
		}
	}
	doc := get(t, compareURL(ts.URL, 8, 7, "greedy", hot, "beam=3"))
	if best := doc.Find(`[data-testid="beam-best"] code`).Text(); !strings.Contains(best, `"`) {
		t.Errorf("the beam's choice %q is not text", best)
	}
	// a branch of lane 1 at step 3
	resp, err := http.Get(strings.Replace(compareURL(ts.URL, 8, 0, "greedy", "beam=2"), "/compare?", "/compare.json?", 1))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Lanes []struct {
			Tokens []int32 `json:"tokens"`
		} `json:"lanes"`
	}
	json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	tk := r.Lanes[0].Tokens
	other := tk[2] + 1
	force := itoa(int(tk[0])) + ">" + itoa(int(tk[1])) + ">" + itoa(int(other))
	doc = get(t, compareURL(ts.URL, 8, 3, "greedy", "greedy,force="+force))
	if title := doc.Find(`[data-testid="lane"][data-lane-index="1"] [data-testid="lane-title"]`).Text(); !strings.Contains(title, "what if step 3 were") || !strings.Contains(title, "lane 1's tokens before it") {
		t.Errorf("branch title %q", strings.Join(strings.Fields(title), " "))
	}
}

// Lanes are chosen from forms: a strategy and its settings become the
// lane's text (what links and the command line use), and a link's text
// fills the forms back, keeping the settings they lack.
func TestCompareLanesFromForms(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	q := url.Values{"prompt": {"Lily saw a"}, "n": {"4"}, "lane": {"greedy", "temperature=0.7,top-k=20,seed=1"}}
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/compare?"+q.Encode()), chromedp.WaitVisible(chromedp.CSS(`[data-testid="lane"]`)))
	row := func(i int, field string) string {
		return fmt.Sprintf(`[data-lane-form="%d"] [data-lane-field=%q]`, i, field)
	}
	val := func(sel string) string { return eval[string](t, ctx, `document.querySelector('`+sel+`').value`, false) }
	if k, temp, seed := val(row(1, "kind")), val(row(1, "temperature")), val(row(1, "seed")); k != "sample" || temp != "0.7" || seed != "1" {
		t.Errorf("lane 2's form from its link: %s, temperature %s, seed %s", k, temp, seed)
	}
	if vis := eval[bool](t, ctx, `document.querySelector('`+row(1, "beam")+`').closest('label').hidden`, false); !vis {
		t.Error("a sampling lane shows the beam width")
	}
	// lane 2 at temperature 1.2 (top-k=20 kept); lane 3 a beam of 3; lane 4 speculative, greedy
	set := func(sel, v string) {
		eval[any](t, ctx, fmt.Sprintf(`(e => { e.value = %q; e.dispatchEvent(new Event(e.tagName === "SELECT" ? "change" : "input", {bubbles: true})); return null })(document.querySelector('%s'))`, v, sel), false)
	}
	set(row(1, "temperature"), "1.2")
	set(row(2, "kind"), "beam")
	set(row(2, "beam"), "3")
	set(row(3, "kind"), "speculative")
	set(row(3, "k"), "3")
	texts := eval[[]string](t, ctx, `[...document.querySelectorAll('input[name="lane"]')].map(e => e.value)`, false)
	want := []string{"greedy", "temperature=1.2,seed=1,top-k=20", "beam=3", "greedy,spec=lesson-draft.gguf,k=3", "", ""}
	if diff := cmp.Diff(want, texts); diff != "" {
		t.Fatalf("the lanes' texts (-want +got):\n%s", diff)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`button[data-action="compare"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="lane"][data-lane-index="3"]`)))
	titles := eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="lane-title"]')].map(e => e.textContent.replace(/\s+/g, " ").trim())`, false)
	if len(titles) != 4 || !strings.Contains(titles[2], "beam=3") || !strings.Contains(titles[3], "spec=lesson-draft.gguf") {
		t.Errorf("the compared lanes: %q", titles)
	}
	fits(t, ctx, 390, "the compare page")
	screenshot(t, ctx, "compare-lane-forms-phone")
}

// Stepping through a comparison shows the run it measured, saying when;
// "Measure again" runs it afresh instead of serving the kept figures.
func TestCompareMeasuresAgainOnRequest(t *testing.T) {
	s, ts := testServer(t)
	u := compareURL(ts.URL, 6, 2, "greedy", "beam=2")
	doc := get(t, u)
	again, ok := doc.Find(`[data-testid="measure-again"]`).Attr("href")
	if !ok || !strings.Contains(again, "measure=again") {
		t.Fatalf("no measure-again link: %q", again)
	}
	q, _ := url.Parse(u)
	key := url.Values{"prompt": {q.Query().Get("prompt")}, "model": {"stories260K.gguf"}, "n": {"6"}, "lane": {"greedy", "beam=2"}}.Encode()
	first, ok := s.compares.get(key)
	if !ok {
		t.Fatal("the comparison was not kept for stepping")
	}
	get(t, compareURL(ts.URL, 6, 4, "greedy", "beam=2")) // another step: the same run
	if kept, _ := s.compares.get(key); kept != first {
		t.Error("a step through the comparison ran it again")
	}
	doc = get(t, ts.URL+again)
	if fresh, _ := s.compares.get(key); fresh == first {
		t.Error("measure=again served the kept figures")
	}
	if speed := doc.Find(`[data-testid="lane-metric"][data-name="speed (measured)"]`).First().Text(); !strings.Contains(speed, "3 runs") {
		t.Errorf("speed %q", speed)
	}
	if doc.Find(`[data-testid="measured-at"]`).Length() != 1 {
		t.Error("no measurement time")
	}
}

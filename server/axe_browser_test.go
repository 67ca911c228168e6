package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"stepthrough/classroom"
)

// axeTags are the rule sets WCAG 2.2 AA asks for.
var axeTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"}

// axeVariant is one rendering of a page: a width and a theme.
type axeVariant struct {
	name  string
	w, h  int64
	theme string // "" or "projector"
}

// axeVariants are the widths of a phone, a laptop and a projector, each
// in the default (dark) theme and the projector's (light).
var axeVariants = func() []axeVariant {
	var vs []axeVariant
	for _, theme := range []string{"", "projector"} {
		for _, s := range []screenSize{{"390", 390, 844}, {"1280", 1280, 800}, {"1920", 1920, 1080}} {
			name := "dark-" + s.name
			if theme != "" {
				name = theme + "-" + s.name
			}
			vs = append(vs, axeVariant{name, s.w, s.h, theme})
		}
	}
	return vs
}()

// axeNode and axeResult are the parts of axe's results the test reports.
type axeNode struct {
	Target  []string `json:"target"`
	Summary string   `json:"summary"`
}

type axeResult struct {
	ID     string    `json:"id"`
	Impact string    `json:"impact"`
	Help   string    `json:"help"`
	Nodes  []axeNode `json:"nodes"`
}

type axeReport struct {
	Violations []axeResult `json:"violations"`
	Incomplete []axeResult `json:"incomplete"`
}

// axeTally is what one page state gave over its variants.
type axeTally struct {
	state                  string
	violations, incomplete int
}

// axeAudit runs axe-core in one browser over many page states.
type axeAudit struct {
	t      *testing.T
	ctx    context.Context
	src    string
	runs   int
	tally  []axeTally
	spent  time.Duration
	seenIn map[string]bool // incomplete items already logged (rule + target)
}

// newAxeAudit reads the pinned axe-core (a devDependency in static/, never
// copied to vendor/ or served) and lets it past the page's CSP.
func newAxeAudit(t *testing.T, ctx context.Context) *axeAudit {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "static", "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		msg := fmt.Sprintf("axe-core not installed (npm ci --prefix static): %v", err)
		if os.Getenv("REQUIRE_BROWSER") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true})
		return err
	}))
	return &axeAudit{t: t, ctx: ctx, src: string(src), seenIn: map[string]bool{}}
}

// page opens path and audits it.
func (a *axeAudit) page(state, path, ready string) {
	a.t.Helper()
	do(a.t, a.ctx, chromedp.Navigate(path), chromedp.WaitReady(chromedp.CSS(ready)))
	a.audit(state)
}

// audit runs axe on the page as it stands, at every width in both
// themes, and checks its reflow.
func (a *axeAudit) audit(state string) {
	a.t.Helper()
	a.auditIn(state, axeVariants)
}

// auditIn runs axe at the variants given, with every disclosure open (the
// projector's full-screen join code aside), failing on any violation,
// then checks the reflow at 320 and 640 px in both themes.
func (a *axeAudit) auditIn(state string, variants []axeVariant) {
	a.t.Helper()
	t0 := time.Now()
	if !eval[bool](a.t, a.ctx, `typeof axe === "object"`, false) {
		eval[any](a.t, a.ctx, a.src+";null", false)
	}
	eval[any](a.t, a.ctx, `document.querySelectorAll('details:not([data-testid="projector-join"])').forEach(d => { d.open = true; }); null`, false)
	tally := a.axeIn(state, variants)
	tally.violations += a.reflow(state)
	a.show(axeVariant{"dark-1280", 1280, 800, ""})
	a.tally = append(a.tally, tally)
	a.spent += time.Since(t0)
}

// axeIn runs axe at each variant and reports each rule violated once,
// with the variants it was violated in.
func (a *axeAudit) axeIn(state string, variants []axeVariant) axeTally {
	a.t.Helper()
	found := map[string]*axeResult{} // rule → its elements over the variants
	where := map[string][]string{}   // rule → variants
	tally := axeTally{state: state}
	for _, v := range variants {
		a.show(v)
		rep := a.run()
		for _, r := range rep.Violations {
			if f, ok := found[r.ID]; ok {
				f.Nodes = mergeNodes(f.Nodes, r.Nodes)
			} else {
				found[r.ID] = &r
			}
			where[r.ID] = append(where[r.ID], v.name)
			tally.violations += len(r.Nodes)
		}
		for _, r := range rep.Incomplete {
			tally.incomplete += len(r.Nodes)
			a.logIncomplete(state, v.name, r)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(found)) {
		a.report(state, *found[id], where[id])
	}
	return tally
}

// reflow checks the page at 320 and 640 px in both themes and returns the
// problems it found; STEPTHROUGH_SCREENSHOTS keeps a screenshot of each.
func (a *axeAudit) reflow(state string) int {
	a.t.Helper()
	n := 0
	for _, v := range reflowVariants {
		a.show(v)
		for _, p := range eval[[]string](a.t, a.ctx, reflowJS, false) {
			a.t.Errorf("%s: reflow at %s: %s", state, v.name, p)
			n++
		}
		if os.Getenv("STEPTHROUGH_SCREENSHOTS") != "" { // to look at; costly, so only when kept
			screenshot(a.t, a.ctx, "reflow-"+strings.NewReplacer(" ", "-", "/", "-", ",", "").Replace(state)+"-"+v.name)
		}
	}
	return n
}

// reflowVariants are 400 % and 200 % zoom of a 1280 × 1024 screen.
var reflowVariants = []axeVariant{{"dark-320", 320, 256, ""}, {"dark-640", 640, 450, ""}, {"projector-320", 320, 256, "projector"}, {"projector-640", 640, 450, "projector"}}

// reflowJS lists what breaks reflow: the page wider than the screen (two
// dimensions of scrolling), or a box that scrolls without being a named,
// focusable region a keyboard can scroll (or a named toolbar whose
// focusable buttons a keyboard walks).
const reflowJS = `(() => {
	const desc = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\s+/).join('.') : '') + (e.dataset.testid ? '[' + e.dataset.testid + ']' : '');
	const out = [], W = document.documentElement.clientWidth;
	if (document.documentElement.scrollWidth > W + 1) {
		const clipped = (e) => { for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) if (getComputedStyle(p).overflowX !== 'visible') return true; return false; };
		const wide = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().left + e.scrollWidth > W + 1 && getComputedStyle(e).position !== 'fixed' && !clipped(e));
		out.push('the page is ' + document.documentElement.scrollWidth + ' px wide: ' + wide.slice(-3).map(e => desc(e) + ' ' + Math.round(e.getBoundingClientRect().left + e.scrollWidth)).join(', '));
	}
	for (const e of document.querySelectorAll('body *')) {
		const cs = getComputedStyle(e);
		if (!/auto|scroll/.test(cs.overflowX + ' ' + cs.overflowY)) continue;
		if (e.scrollWidth <= e.clientWidth + 1 && e.scrollHeight <= e.clientHeight + 1) continue;
		if (e.matches('textarea, select, input')) continue; // a labelled field scrolls its own text
		if (e.tabIndex >= 0 && e.getAttribute('role') === 'region' && e.getAttribute('aria-label')) continue;
		// a named toolbar whose buttons take focus (roving tabindex): moving
		// focus along it scrolls each button into view
		if (e.getAttribute('role') === 'toolbar' && e.getAttribute('aria-label') && e.querySelector('button[tabindex="0"]:not([disabled])')) continue;
		out.push('scrolls but is not a named, focusable region: ' + desc(e));
	}
	return out;
})()`

// show renders the page at a variant's size and theme.
func (a *axeAudit) show(v axeVariant) {
	a.t.Helper()
	do(a.t, a.ctx, chromedp.EmulateViewport(v.w, v.h))
	// the theme's colours change through transitions: read them settled
	eval[any](a.t, a.ctx, fmt.Sprintf(`document.documentElement.dataset.theme = %q;
		Promise.all(document.getAnimations().filter(x => x.effect && x.effect.getComputedTiming().endTime !== Infinity).map(x => x.finished.catch(() => null))).then(() => null)`, v.theme), true)
}

// run is one axe pass over the document.
func (a *axeAudit) run() axeReport {
	a.t.Helper()
	a.runs++
	tags, _ := json.Marshal(axeTags)
	js := fmt.Sprintf(`axe.run(document, {runOnly: {type: 'tag', values: %s}, resultTypes: ['violations', 'incomplete']}).then(r => {
		const pick = (v) => ({id: v.id, impact: v.impact || "", help: v.help, nodes: v.nodes.map(n => ({target: n.target.map(String), summary: n.failureSummary || ""}))});
		return JSON.stringify({violations: r.violations.map(pick), incomplete: r.incomplete.map(pick)});
	})`, tags)
	var rep axeReport
	if err := json.Unmarshal([]byte(eval[string](a.t, a.ctx, js, true)), &rep); err != nil {
		a.t.Fatalf("axe's results: %v", err)
	}
	return rep
}

// report fails on a violation: its
// rule, impact, where, the elements and what is wrong with the first.
func (a *axeAudit) report(state string, r axeResult, variants []string) {
	a.t.Helper()
	var targets []string
	for _, n := range r.Nodes {
		targets = append(targets, strings.Join(n.Target, " "))
	}
	more := ""
	if len(targets) > 6 {
		more = fmt.Sprintf(" and %d more", len(targets)-6)
		targets = targets[:6]
	}
	summary := strings.Join(strings.Fields(r.Nodes[0].Summary), " ")
	msg := fmt.Sprintf("%s: %s (%s) %s — in %s — at %s%s — %.300s", state, r.ID, r.Impact, r.Help, strings.Join(variants, ", "), strings.Join(targets, " | "), more, summary)
	a.t.Error(msg)
}

// logIncomplete logs what axe could not decide (needs review), each rule
// and element once.
func (a *axeAudit) logIncomplete(state, variant string, r axeResult) {
	var targets []string
	for _, n := range r.Nodes {
		k := r.ID + " " + strings.Join(n.Target, " ")
		if !a.seenIn[k] {
			a.seenIn[k] = true
			targets = append(targets, strings.Join(n.Target, " "))
		}
	}
	if len(targets) == 0 {
		return
	}
	if len(targets) > 4 {
		targets = append(targets[:4], fmt.Sprintf("%d more", len(targets)-4))
	}
	a.t.Logf("needs review: %s %s: %s (%s): %s", state, variant, r.ID, r.Help, strings.Join(targets, " | "))
}

func mergeNodes(have, more []axeNode) []axeNode {
	for _, n := range more {
		if !slices.ContainsFunc(have, func(h axeNode) bool { return slices.Equal(h.Target, n.Target) }) {
			have = append(have, n)
		}
	}
	return have
}

// summary logs the totals per state and the time axe took.
func (a *axeAudit) summary() {
	var b strings.Builder
	for _, x := range a.tally {
		fmt.Fprintf(&b, "\n  %-44s violations %3d  needs review %3d", x.state, x.violations, x.incomplete)
	}
	a.t.Logf("axe: %d states, %d runs, %v auditing; elements counted once per variant%s", len(a.tally), a.runs, a.spent.Round(time.Millisecond), b.String())
}

// axeCPUTime is the CPU time so far of this test process and of the
// browser's process tree (from /proc on Linux; the browser's part is 0
// elsewhere): what the audit costs an idle machine, which the wall clock
// of a shared one hides.
func axeCPUTime(ctx context.Context) (self, browser time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	c := chromedp.FromContext(ctx)
	if c == nil || c.Browser == nil || c.Browser.Process() == nil {
		return self, 0
	}
	parent, ticks := map[int]int{}, map[int]int64{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		i := strings.LastIndexByte(string(b), ')')
		if err != nil || i < 0 {
			continue
		}
		f := strings.Fields(string(b)[i+1:]) // state ppid … utime(12) stime(13) cutime(14) cstime(15)
		if len(f) < 16 {
			continue
		}
		parent[pid], _ = strconv.Atoi(f[1])
		for _, k := range f[12:16] {
			n, _ := strconv.ParseInt(k, 10, 64)
			ticks[pid] += n
		}
	}
	root := c.Browser.Process().Pid
	var sum int64
	for pid := range ticks {
		for p := pid; p > 1; p = parent[p] {
			if p == root {
				sum += ticks[pid]
				break
			}
		}
	}
	return self, time.Duration(sum) * 10 * time.Millisecond // USER_HZ = 100
}

// Every page, every Explorer stage of a first token and of a decode
// step, a speculative round, and a room's three views at a narration, an
// open poll and a revealed one pass axe-core's WCAG 2.2 AA rules at a
// phone's, a laptop's and a projector's width in both themes.
func TestAxe(t *testing.T) {
	start := time.Now()
	ctx, base, s := axeServer(t)
	a := newAxeAudit(t, ctx)
	defer func() {
		a.summary()
		self, browser := axeCPUTime(ctx)
		t.Logf("TestAxe took %v; CPU time: %v in the test process, %v in the browser", time.Since(start).Round(time.Millisecond), self.Round(time.Millisecond), browser.Round(time.Millisecond))
	}()
	t.Run("pages", func(t *testing.T) { a.t = t; axePages(a, base) })
	t.Run("explorer", func(t *testing.T) { a.t = t; axeExplorer(a, base) })
	t.Run("lessons", func(t *testing.T) { a.t = t; axeLessons(a, base, s) })
	t.Run("room", func(t *testing.T) { a.t = t; axeRoom(a, base) })
	a.t = t
}

// axeServer is browserServer with the time a whole audit needs.
func axeServer(t *testing.T) (context.Context, string, *Server) {
	t.Helper()
	actx := chromeAlloc(t)
	s := mustNew(t, Config{Embedded: lessonModels(), Limits: classroom.Limits{StudentsPerAddress: 300}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	ctx, cancelC := chromedp.NewContext(actx)
	// every page, lesson step and stage in every variant: about eight
	// minutes on two idle cores, more beside other work
	ctx, cancelT := context.WithTimeout(ctx, 20*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC() })
	return ctx, "http://" + ln.Addr().String(), s
}

// axePages audits every page that is not a lesson or a room.
func axePages(a *axeAudit, base string) {
	a.t.Helper()
	reqID := axeAPIRequest(a.t, base)
	for _, p := range []struct{ name, path string }{
		{"explorer (empty)", "/"},
		{"lessons", "/lessons"},
		{"classroom", "/classroom"},
		{"classroom (unknown code)", "/join?code=ZZZZZZ"},
		{"compare", "/compare?" + url.Values{"prompt": {"Lily saw a"}, "n": {"6"}, "step": {"3"},
			"lane": {"greedy", "temperature=1,top-p=0.9,seed=2", "beam=2", "greedy,spec=lesson-draft.gguf,k=4"}}.Encode()},
		{"families", "/families"},
		{"memory", "/memory"},
		{"memory (measured)", "/memory?" + url.Values{"source": {"lesson.gguf"}, "type": {"Q4_K_M"}, "kv": {"4"}, "ctx": {"512"}, "batch": {"4"}, "memory": {"1"}, "price": {"2"}}.Encode()},
		{"memory (error)", "/memory?ctx=abc"},
		{"quantization", "/quantization"},
		{"patching", "/patching"},
		{"serving", "/serving"},
		{"serving sweep", "/serving/sweep?model=lesson.gguf"},
		{"serving benchmarking", "/serving/benchmarking"},
		{"requests", "/requests"},
		{"request", "/requests/" + reqID},
		{"agent", "/agent"},
		{"models", "/models"},
	} {
		a.page(p.name, base+p.path, "main")
	}
	do(a.t, a.ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/serving"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="start"]`)),
		chromedp.SetValue(chromedp.CSS(`input[name="users"]`), "3"), chromedp.SetValue(chromedp.CSS(`input[name="prompt"]`), "16"),
		chromedp.SetValue(chromedp.CSS(`input[name="min"]`), "8"), chromedp.SetValue(chromedp.CSS(`input[name="max"]`), "8"))
	click(a.t, a.ctx, `[data-testid="start"]`)
	do(a.t, a.ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="run"][data-done="true"] [data-testid="result"]`)))
	a.audit("serving run")
}

// axeAPIRequest makes one chat completion through the API and returns its
// id, so /requests has an entry and a page.
func axeAPIRequest(t *testing.T, base string) string {
	t.Helper()
	body := `{"model": "lesson.gguf", "messages": [{"role": "user", "content": "What is the capital of Italy?"}], "temperature": 0, "max_tokens": 8}`
	res, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct{ ID string }
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || out.ID == "" {
		t.Fatalf("chat completion: %s, %v", res.Status, err)
	}
	return out.ID
}

// axeExplorer steps the Explorer through every stage of the first token
// and of the decode step after it, then through a speculative round's own
// stages.
func axeExplorer(a *axeAudit, base string) {
	a.t.Helper()
	do(a.t, a.ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/?"+url.Values{"prompt": {"Once upon a time"}, "max_tokens": {"4"}, "seed": {"3"}}.Encode()),
		chromedp.WaitVisible(chromedp.CSS(`[data-stage="tokenize"]`)))
	axeWalk(a, "explorer", func(string) bool { return true }, func() bool { return attr(a.t, a.ctx, "#state", "data-token-step") == "3" })
	do(a.t, a.ctx, chromedp.Navigate(base+"/?"+url.Values{"prompt": {"Once upon a time"}, "max_tokens": {"2"}, "seed": {"3"}, "vs": {"Q4_0"}}.Encode()),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="versus"]`)))
	beside := func(stage string) bool { return slices.Contains([]string{"embed", "softmax", "kv"}, stage) } // its rows, its distribution, its drift table
	axeWalk(a, "beside Q4_0", beside, func() bool { return attr(a.t, a.ctx, "#state", "data-token-step") == "2" })
	q := url.Values{"prompt": {"Once upon a time, there was a girl named"}, "model": {"lesson.gguf"}, "draft": {"lesson-draft.gguf"}, "draft_k": {"4"},
		"temperature": {"1"}, "seed": {"11"}, "max_tokens": {"24"}, "step": {"1"}, "stage": {"0"}}
	do(a.t, a.ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/?"+q.Encode()), chromedp.WaitVisible(chromedp.CSS(`[data-stage="propose"]`)))
	specOnly := func(stage string) bool {
		return slices.Contains([]string{"propose", "verify", "accept", "rollback"}, stage)
	} // the rest is the walk above's
	axeWalk(a, "speculative", specOnly, func() bool { return attr(a.t, a.ctx, "#state", "data-token-step") != "2" })
}

// axeWalk audits the Explorer's stage, steps, and repeats until done.
func axeWalk(a *axeAudit, name string, keep func(stage string) bool, done func() bool) {
	a.t.Helper()
	for range 80 {
		if keep(attr(a.t, a.ctx, "[data-current-stage]", "data-current-stage")) {
			step := attr(a.t, a.ctx, "#state", "data-token-step")
			a.audit(fmt.Sprintf("%s t%s %s", name, step, attr(a.t, a.ctx, "#state", "data-stage-label")))
		}
		if attr(a.t, a.ctx, "#state", "data-end") == "true" {
			return
		}
		before := attr(a.t, a.ctx, "#state", "data-url")
		click(a.t, a.ctx, `[data-action="step"]`)
		waitChange(a.t, a.ctx, "#state", "data-url", before)
		if done() {
			return
		}
	}
	a.t.Fatalf("%s: the walk never ended", name)
}

// axeLessons audits every step of every lesson, each in one variant
// (taking turns): their panels are the Explorer's, audited in all six.
func axeLessons(a *axeAudit, base string, s *Server) {
	a.t.Helper()
	k := 0
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range s.lessons {
			if !yield(n) {
				return
			}
		}
	}) {
		for i := range s.lessons[n].Steps {
			v := axeVariants[k%len(axeVariants)]
			k++
			do(a.t, a.ctx, chromedp.Navigate(fmt.Sprintf("%s/lessons/%s?step=%d", base, n, i)), chromedp.WaitReady(chromedp.CSS("main")))
			a.auditIn(fmt.Sprintf("lesson %s %d", n, i+1), []axeVariant{v})
		}
	}
}

// axeRoom audits a room's instructor, student and projector views at a
// narration step, with a poll open (one answer in) and once revealed.
func axeRoom(a *axeAudit, base string) {
	a.t.Helper()
	code, key := startRoom(a.t, base, url.Values{"lesson": {"logits-and-softmax"}})
	teach := dialRoom(a.t, base, code, "key="+key)
	teach.wait(`id="teach-extras"`)
	views := func(kind string) {
		a.page("room instructor, "+kind, base+"/rooms/"+code+"/teach?key="+key, "#room-view")
		a.page("room student, "+kind, base+"/rooms/"+code, "#room-view")
		a.page("room projector, "+kind, base+"/rooms/"+code+"/projector", "#room-view")
	}
	views("narration")
	teach.send(map[string]string{"action": "lesson-step", "to": "1"})
	teach.wait(`data-lesson-step="1"`)
	st := dialRoom(a.t, base, code, newStudent(a.t, base, code))
	st.send(map[string]string{"action": "answer", "answer": " Par"})
	st.wait(`id="room-note"`)
	views("poll open")
	teach.send(map[string]string{"action": "reveal"})
	teach.wait(`data-testid="reveal"`)
	views("poll revealed")
}

// contrastJS defines ratio(a, b), the WCAG contrast of two computed
// colours, colour(v), a CSS colour computed, and behind(e), the colour an
// element's box is drawn over.
const contrastJS = `
	const rgb = (c) => { const m = c.match(/[\d.]+/g).map(Number); return m.length > 3 && m[3] === 0 ? null : m.slice(0, 3); };
	const lum = (c) => { const [r, g, b] = c.map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
	const ratio = (a, b) => { const [x, y] = [lum(rgb(a)), lum(rgb(b))]; return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
	const colour = (v) => { const i = document.createElement('i'); i.style.color = v; document.body.append(i); const c = getComputedStyle(i).color; i.remove(); return c; };
	const behind = (e) => { for (let p = e.parentElement; p; p = p.parentElement) { const c = getComputedStyle(p).backgroundColor; if (rgb(c)) return c; } return 'rgb(255, 255, 255)'; };
`

// nonTextCheck is one check of TestFocusIsNotCurrent: a script that
// returns what fails ([] when nothing does).
type nonTextCheck struct{ name, stage, js string }

// The keyboard's focus ring never looks like the "current" marker (the
// model map's part, the head grid's button, the sampler funnel's step,
// the heatmap's row): the ring is an outline set off from its element in
// the focus colour, 3:1 against what surrounds it; the marker is filled,
// bold or bordered in another colour. Form fields' borders are 3:1
// against their panel, and a masked heatmap cell is 3:1 against a weight
// of 0 — in both themes (WCAG 1.4.11, 2.4.7).
func TestFocusIsNotCurrent(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error { // :focus-visible as in a focused window
		_, err := cdp.Call(ctx, tg, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
		return err
	}))
	run := "/?" + url.Values{"prompt": {"Once upon a time"}, "max_tokens": {"4"}, "seed": {"3"}}.Encode()
	ring := `const ring = (e, current) => { e.focus(); const s = getComputedStyle(e), out = [];
		if (!e.matches(':focus-visible')) return ['not focused with a visible ring'];
		if (s.outlineStyle === 'none' || parseFloat(s.outlineWidth) < 2 || parseFloat(s.outlineOffset) < 2) out.push('ring ' + s.outlineStyle + ' ' + s.outlineWidth + ' offset ' + s.outlineOffset);
		if (ratio(s.outlineColor, behind(e)) < 3) out.push('ring ' + s.outlineColor + ' on ' + behind(e) + ': ' + ratio(s.outlineColor, behind(e)).toFixed(2));
		if (s.outlineColor === current) out.push('the ring and the current marker are both ' + current);
		e.blur(); return out; };`
	checks := []nonTextCheck{
		{"form fields", "", `[...document.querySelectorAll('form.settings input:not([type=checkbox]):not([type=radio]):not([type=range]), form.settings select, form.settings textarea, form.settings button')].filter(e => e.offsetParent)
			.flatMap(e => { const s = getComputedStyle(e), r = Math.min(ratio(s.borderTopColor, behind(e)), ratio(s.borderTopColor, s.backgroundColor));
				return r < 3 ? [e.tagName + '[name=' + e.name + '] border ' + s.borderTopColor + ': ' + r.toFixed(2)] : []; })`},
		{"map", "attention", `(e => ring(e, getComputedStyle(e.querySelector('rect')).fill))(document.querySelector('.map .part.here'))`},
		{"head grid", "attention", `(e => ring(e, getComputedStyle(e).borderTopColor))(document.querySelector('.headgrid button.head.current'))`},
		{"funnel", "sampler", `(e => ring(e, getComputedStyle(e.querySelector('rect')).stroke))(document.querySelector('svg.funnel .fstep.here'))`},
		{"heatmap", "attention", `(c => { const g = c.getContext('2d'), px = (x, y) => 'rgb(' + [...g.getImageData(x * 2, y * 2, 1, 1).data.slice(0, 3)].join(', ') + ')';
			const rows = c.dataset.values.split(';').map(r => r.split(' ')), cur = Number(c.dataset.current), out = [];
			const i = rows.findIndex(r => r.includes('x')); if (i < 0) return ['no masked cell drawn'];
			const j = rows[i].indexOf('x'), x = 100 + 22 * j, y = 78 + 22 * i, zero = 'rgb(20, 20, 60)';
			const fill = px(x + 3, y + 3), hatch = px(x + 10.5, y + 10.5), best = Math.max(ratio(fill, zero), ratio(hatch, zero));
			if (best < 3) out.push('a masked cell (' + fill + ' crossed by ' + hatch + ') against a weight of 0 ' + zero + ': ' + best.toFixed(2));
			const row = px(98, 78 + 22 * cur + 10), focus = colour('var(--focus)');
			if (ratio(row, focus) < 1.1) out.push('the current row is outlined ' + row + ', the focus colour ' + focus);
			return out; })(document.querySelector('canvas.heat[data-testid="attn-heatmap"]'))`},
	}
	for _, theme := range []string{"", "projector"} {
		do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/"), chromedp.WaitReady(chromedp.CSS(`main`)))
		eval[any](t, ctx, fmt.Sprintf(`localStorage.setItem('stepthrough-theme', %q); null`, theme), false) // as the toggle leaves it
		for _, c := range checks {
			path := run
			if c.stage != "" {
				path += "&stage=" + c.stage + "&layer=2"
			}
			do(t, ctx, chromedp.Navigate(base+path), chromedp.WaitReady(chromedp.CSS(`main`)))
			if c.name == "heatmap" {
				waitJS(t, ctx, "the heatmap", `!!document.querySelector('canvas.heat[data-painted]')`)
			}
			for _, p := range eval[[]string](t, ctx, `(() => {`+contrastJS+ring+`return `+c.js+`; })()`, false) {
				t.Errorf("%s theme %q: %s", c.name, theme, p)
			}
		}
		screenshot(t, ctx, "focus-current-"+cmp.Or(theme, "dark"))
	}
}

// Colour is never the only cue: with deuteranopia and achromatopsia
// emulated, the sampler's renormalised bars are still striped where the
// softmax's are solid (counted along each bar's middle row of pixels), and
// removed candidates are struck through and say so, in both themes; the
// softmax, sampler and attention panels' screenshots are kept with
// STEPTHROUGH_SCREENSHOTS to be looked at.
func TestColourIsNotAlone(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	run := base + "/?" + url.Values{"prompt": {"Lily saw a"}, "max_tokens": {"4"}, "seed": {"3"}, "temperature": {"1.5"}}.Encode()
	for _, vision := range []emulation.SetEmulatedVisionDeficiencyType{emulation.SetEmulatedVisionDeficiencyTypeDeuteranopia, emulation.SetEmulatedVisionDeficiencyTypeAchromatopsia} {
		do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedVisionDeficiency, emulation.SetEmulatedVisionDeficiencyParams{Type: vision})
			return err
		}))
		for _, theme := range []string{"", "projector"} {
			name := fmt.Sprintf("%s-%s", vision, cmp.Or(theme, "dark"))
			do(t, ctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/"), chromedp.WaitReady(chromedp.CSS(`main`)))
			eval[any](t, ctx, fmt.Sprintf(`localStorage.setItem('stepthrough-theme', %q); null`, theme), false) // as the toggle leaves it
			do(t, ctx, chromedp.Navigate(run+"&stage=softmax"), chromedp.WaitVisible(chromedp.CSS(`progress.pbar.before`)))
			if n := stripes(t, ctx, `progress.pbar.before`); n > 2 {
				t.Errorf("%s: the softmax's bar changes colour %d times across: want it solid", name, n)
			}
			keepPanel(t, ctx, "colour-softmax-"+name)
			do(t, ctx, chromedp.Navigate(run+"&stage=sampler&filter=4"), chromedp.WaitVisible(chromedp.CSS(`progress.pbar.after`)))
			if n := stripes(t, ctx, `progress.pbar.after`); n < 6 {
				t.Errorf("%s: the sampler's renormalised bar changes colour %d times across: want stripes", name, n)
			}
			if bad := eval[[]string](t, ctx, `[...document.querySelectorAll('tr.removed')].filter(r => getComputedStyle(r.cells[0]).textDecorationLine !== 'line-through' || !r.textContent.includes('removed')).map(r => r.textContent.trim())`, false); len(bad) > 0 {
				t.Errorf("%s: removed rows told by colour alone: %q", name, bad)
			}
			keepPanel(t, ctx, "colour-sampler-"+name)
			do(t, ctx, chromedp.Navigate(run+"&stage=attention&layer=2"), chromedp.WaitReady(chromedp.CSS(`canvas.heat[data-painted]`)))
			keepPanel(t, ctx, "colour-attention-"+name)
		}
	}
}

// stripes counts the colour changes along the middle row of the first
// element sel matches, as the screen shows it.
func stripes(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.ScreenshotScale(chromedp.CSS(sel), 1))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		t.Fatal(err)
	}
	b, n := img.Bounds(), 0
	y := (b.Min.Y + b.Max.Y) / 2
	grey := func(x int) int { r, g, bl, _ := img.At(x, y).RGBA(); return int(r>>8+g>>8+bl>>8) / 3 }
	for x := b.Min.X + 1; x < b.Max.X; x++ {
		if d := grey(x) - grey(x-1); d > 40 || d < -40 {
			n++
		}
	}
	return n
}

// keepPanel writes the stage panel's screenshot when
// STEPTHROUGH_SCREENSHOTS names a directory.
func keepPanel(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("STEPTHROUGH_SCREENSHOTS")
	if dir == "" {
		return
	}
	buf, err := chromedp.Run(ctx, chromedp.ScreenshotScale(chromedp.CSS(`#explorer section.panel[data-stage]`), 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

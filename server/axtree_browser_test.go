package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/chromedp"

	"stepthrough/classroom"
)

// axNode is a node of Chromium's accessibility tree as a screen reader
// gets it: its role, its name, its states and properties, and its
// children (the tree's ignored nodes are passed through).
type axNode struct {
	role, name string
	props      map[string]string
	kids       []*axNode
}

// axTree reads the page's whole accessibility tree over the DevTools
// protocol (Accessibility.getFullAXTree).
func axTree(t *testing.T, ctx context.Context) *axNode {
	t.Helper()
	res, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		t.Fatalf("the accessibility tree: %v", err)
	}
	byID := map[accessibility.NodeID]*accessibility.Node{}
	for _, n := range res.Nodes {
		byID[n.NodeID] = n
	}
	if len(res.Nodes) == 0 {
		t.Fatal("an empty accessibility tree")
	}
	return &axNode{role: "root", kids: axKids(res.Nodes[0], byID)}
}

// axKids converts a node's children, flattening ignored nodes into
// their parent (as assistive technology sees the tree).
func axKids(n *accessibility.Node, byID map[accessibility.NodeID]*accessibility.Node) []*axNode {
	var out []*axNode
	for _, id := range n.ChildIDs {
		c := byID[id]
		if c == nil {
			continue
		}
		if c.Ignored {
			out = append(out, axKids(c, byID)...)
			continue
		}
		a := &axNode{role: axValue(c.Role), name: axValue(c.Name), props: map[string]string{}, kids: axKids(c, byID)}
		for _, p := range c.Properties {
			a.props[string(p.Name)] = axValue(p.Value)
		}
		out = append(out, a)
	}
	return out
}

// axValue is a protocol value as text ("" when absent).
func axValue(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var x any
	if err := json.Unmarshal(v.Value, &x); err != nil {
		return string(v.Value)
	}
	return strings.Join(strings.Fields(fmt.Sprint(x)), " ")
}

// find is every node under n (n included) that matches.
func (n *axNode) find(match func(*axNode) bool) []*axNode {
	var out []*axNode
	if match(n) {
		out = append(out, n)
	}
	for _, k := range n.kids {
		out = append(out, k.find(match)...)
	}
	return out
}

// table is the table whose name starts with prefix: exactly one, or the
// test fails.
func (n *axNode) table(t *testing.T, prefix string) *axNode {
	t.Helper()
	ts := n.find(func(a *axNode) bool { return a.role == "table" && strings.HasPrefix(a.name, prefix) })
	if len(ts) != 1 {
		var names []string
		for _, a := range n.find(func(a *axNode) bool { return a.role == "table" }) {
			names = append(names, strconv.Quote(a.name))
		}
		t.Fatalf("%d tables named %q…; the tables: %s", len(ts), prefix, strings.Join(names, ", "))
	}
	return ts[0]
}

// cells is a table's rows, each its cells' names.
func (n *axNode) cells() [][]string {
	var out [][]string
	for _, r := range n.find(func(a *axNode) bool { return a.role == "row" }) {
		var row []string
		for _, c := range r.kids {
			switch c.role {
			case "cell", "gridcell", "columnheader", "rowheader":
				row = append(row, c.name)
			}
		}
		out = append(out, row)
	}
	return out
}

// dump is the subtree as indented "role "name"" lines (a row as its
// cells' names), at most most lines, for the log.
func (n *axNode) dump(depth, most int) string {
	var b strings.Builder
	var walk func(a *axNode, d int)
	walk = func(a *axNode, d int) {
		if strings.Count(b.String(), "\n") >= most || a.role == "StaticText" || a.role == "InlineTextBox" || a.role == "caption" {
			return
		}
		if a.role == "row" { // a row on one line: its cells' names
			fmt.Fprintf(&b, "%srow: %s\n", strings.Repeat("  ", d), strings.Join((&axNode{kids: []*axNode{a}}).cells()[0], " | "))
			return
		}
		fmt.Fprintf(&b, "%s%s %q", strings.Repeat("  ", d), a.role, a.name)
		if p, ok := a.props["pressed"]; ok {
			fmt.Fprintf(&b, " pressed=%s", p)
		}
		b.WriteString("\n")
		for _, k := range a.kids {
			walk(k, d+1)
		}
	}
	walk(n, depth)
	return b.String()
}

// openDetails opens every disclosure on the page (their content joins
// the accessibility tree) and waits for the ones the page fills.
func openDetails(t *testing.T, ctx context.Context) {
	t.Helper()
	eval[bool](t, ctx, `document.querySelectorAll('section.panel details').forEach(d => { d.open = true; }); true`, false)
	waitJS(t, ctx, "the strips' tables", `[...document.querySelectorAll('details.strip-values, details.scatter-values')].every(d => d.dataset.filled === "1")`)
}

// pctOf is a probability as the panels write it.
func pctOf(t *testing.T, p string) string {
	t.Helper()
	v, err := strconv.ParseFloat(p, 64)
	if err != nil {
		t.Fatalf("a probability %q: %v", p, err)
	}
	return fmt.Sprintf("%.2f%%", 100*v)
}

// What a screen reader gets of the softmax, attention, KV and sample
// panels, read from Chromium's accessibility tree: each has a table named
// by its caption whose cells hold the values the panel shows (checked
// against the numbers the page's pictures are drawn from), the
// attention table a row per query token, and the states the pictures
// show by colour or line — removed, current, new, cached, chosen — in
// words.
func TestPanelsInTheAccessibilityTree(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	// typical-p 0.5 at T = 1 keeps three tokens of "She was very" that are
	// not simply the three most likely: the removed are not below a cut
	do(t, ctx, chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(base+"/?prompt=She+was+very&model=lesson.gguf&temperature=1&typical_p=0.5&max_tokens=3"),
		chromedp.WaitVisible(chromedp.CSS(`[data-stage="tokenize"]`)))

	stepUntil(t, ctx, "attention")
	openDetails(t, ctx)
	checkAttentionTable(t, ctx, axTree(t, ctx))

	stepUntil(t, ctx, "softmax")
	checkSoftmaxTable(t, ctx, axTree(t, ctx))

	stepUntil(t, ctx, "sample")
	openDetails(t, ctx)
	checkSampleTable(t, ctx, axTree(t, ctx))

	stepUntil(t, ctx, "kv")
	checkKVTable(t, ctx, axTree(t, ctx), "the prompt's")
	before := attr(t, ctx, "#state", "data-url")
	click(t, ctx, `#action-next-token`)
	waitChange(t, ctx, "#state", "data-url", before)
	stepUntil(t, ctx, "kv")
	openDetails(t, ctx)
	tree := axTree(t, ctx)
	checkKVTable(t, ctx, tree, "the first new token's")
	checkStripTables(t, ctx, tree)
}

// checkAttentionTable: a row per query token, a column per key, each
// cell the heatmap's value to three places (blank where masked).
func checkAttentionTable(t *testing.T, ctx context.Context, tree *axNode) {
	t.Helper()
	tab := tree.table(t, "Layer 1, head 1: attention weights")
	rows := tab.cells()
	qlabels := eval[[]string](t, ctx, `JSON.parse(document.querySelector('[data-testid="attn-heatmap"]').dataset.qlabels)`, false)
	values := eval[string](t, ctx, `document.querySelector('[data-testid="attn-heatmap"]').dataset.values`, false)
	heat := strings.Split(values, ";")
	if len(rows) != 1+len(qlabels) || len(heat) != len(qlabels) {
		t.Fatalf("%d table rows for %d query tokens (%d heatmap rows)", len(rows), len(qlabels), len(heat))
	}
	for i, q := range qlabels {
		row := rows[i+1]
		if !strings.Contains(row[0], q) || strings.Contains(row[0], "(current)") != (i == len(qlabels)-1) {
			t.Errorf("row %d is headed %q, want the query token %s (the last one current)", i, row[0], q)
		}
		want := strings.Fields(heat[i])
		if len(row)-1 != len(want) {
			t.Fatalf("row %d: %d cells, the heatmap has %d", i, len(row)-1, len(want))
		}
		for j, w := range want {
			checkCell(t, fmt.Sprintf("attention row %d key %d", i, j), row[j+1], w, 0.001) // both rounded: to 3 places and to 4 digits
		}
	}
	sum := tree.find(func(a *axNode) bool { return a.role == "paragraph" && strings.HasPrefix(a.name, "Head 1 puts") })
	if len(sum) != 1 && len(tree.find(func(a *axNode) bool { return strings.HasPrefix(a.name, "Head 1 puts") })) == 0 {
		t.Error("no summary sentence of where the current token looks")
	}
	t.Logf("attention panel, as a screen reader gets its table:\n%s", tab.dump(0, 24))
}

// checkCell: a table cell holds the value the picture is drawn from
// (want: the picture's number, "x" where masked).
func checkCell(t *testing.T, what, got, want string, tol float64) {
	t.Helper()
	if want == "x" {
		if got != "" {
			t.Errorf("%s: %q where the heatmap is masked", what, got)
		}
		return
	}
	g, err1 := strconv.ParseFloat(got, 64)
	w, err2 := strconv.ParseFloat(want, 64)
	if err1 != nil || err2 != nil || math.Abs(g-w) > tol {
		t.Errorf("%s: the table says %q, the picture %q", what, got, want)
	}
}

// checkSoftmaxTable: a row per listed token, its p the bar's, "removed"
// on exactly the rows the chain removes (here not the least likely).
func checkSoftmaxTable(t *testing.T, ctx context.Context, tree *axNode) {
	t.Helper()
	tab := tree.table(t, "The 30 most likely of")
	rows := tab.cells()
	dom := eval[[][]string](t, ctx, `[...document.querySelectorAll('[data-testid="prob"]')].map(r => [r.dataset.p, String(r.classList.contains('out'))])`, false)
	if len(rows) < 1+len(dom) {
		t.Fatalf("%d table rows for %d tokens", len(rows), len(dom))
	}
	kept, lastKept, firstOut := 0, -1, len(dom)
	for i, d := range dom {
		row := rows[i+1]
		if row[3] != pctOf(t, d[0]) {
			t.Errorf("row %d: p %q, the bar's %s", i, row[3], pctOf(t, d[0]))
		}
		if out := d[1] == "true"; strings.HasSuffix(row[0], " removed") != out {
			t.Errorf("row %d (%q): removed %v in the table, %v on the page", i, row[0], !out, out)
		} else if !out {
			kept, lastKept = kept+1, i
		} else {
			firstOut = min(firstOut, i)
		}
	}
	if want := attr(t, ctx, `[data-testid="nucleus"]`, "data-kept"); strconv.Itoa(kept) != want || firstOut > lastKept {
		t.Errorf("%d rows not removed, the chain keeps %s; a removed row above a kept one: %v", kept, want, firstOut < lastKept)
	}
	t.Logf("softmax panel (typical-p 0.5: the kept are not a prefix):\n%s", tab.dump(0, 16))
}

// checkSampleTable: the draw's candidates with their slices, the chosen
// one said in words and the one the panel names.
func checkSampleTable(t *testing.T, ctx context.Context, tree *axNode) {
	t.Helper()
	tab := tree.table(t, "The candidates the draw chose from")
	rows := tab.cells()
	segs := eval[[][]string](t, ctx, `[...document.querySelectorAll('[data-testid="cdf-seg"]')].map(g => [g.dataset.from, g.dataset.to])`, false)
	chosen := attr(t, ctx, `[data-testid="sampled-token"]`, "data-token-id")
	if len(rows) != 1+min(len(segs), 16) {
		t.Fatalf("%d table rows for %d candidates", len(rows), len(segs))
	}
	n := 0
	for i, row := range rows[1:] {
		if row[3] != pctOf(t, segs[i][0]) || row[4] != pctOf(t, segs[i][1]) {
			t.Errorf("row %d: %s–%s, the picture's slice %s–%s", i, row[3], row[4], segs[i][0], segs[i][1])
		}
		if row[5] == "chosen" {
			n++
			if row[1] != chosen {
				t.Errorf("the table's chosen is id %s, the panel's %s", row[1], chosen)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d rows say chosen", n)
	}
	t.Logf("sample panel:\n%s", tab.dump(0, 12))
}

// checkKVTable: a row per listed position, "new" on the rows this step
// appended and "cached" on the rest, as the page's rows are marked.
func checkKVTable(t *testing.T, ctx context.Context, tree *axNode, which string) {
	t.Helper()
	tab := tree.table(t, "The cache after this step")
	rows := tab.cells()
	dom := eval[[][]string](t, ctx, `[...document.querySelectorAll('[data-testid="kv-row"]')].map(r => [r.dataset.pos, r.dataset.new])`, false)
	if len(rows) != 1+len(dom) || len(dom) == 0 {
		t.Fatalf("%d table rows for %d positions", len(rows), len(dom))
	}
	news := 0
	for i, d := range dom {
		want := map[string]string{"true": "new", "false": "cached"}[d[1]]
		if row := rows[i+1]; row[0] != d[0] || row[2] != want {
			t.Errorf("%s step, position %s: the table reads %q, want %s", which, d[0], row, want)
		}
		if d[1] == "true" {
			news++
		}
	}
	if which != "the prompt's" && news != 1 {
		t.Errorf("%s step appended %d positions, want 1", which, news)
	}
	t.Logf("KV panel, %s step:\n%s", which, tab.dump(0, 8))
}

// checkStripTables: each strip's values are a table (eight to a row)
// whose first value is the one the strip's hover shows.
func checkStripTables(t *testing.T, ctx context.Context, tree *axNode) {
	t.Helper()
	label := eval[string](t, ctx, `document.querySelector('section.panel canvas.strip').getAttribute('aria-label')`, false)
	name := label[:strings.LastIndex(label, ": ")]
	tab := tree.table(t, name+": ")
	rows := tab.cells()
	n, _ := strconv.Atoi(strings.Fields(label[len(name)+2:])[0])
	cells := 0
	for _, r := range rows[1:] {
		cells += len(r) - 1
	}
	hover := eval[string](t, ctx, `(() => { const c = document.querySelector('section.panel canvas.strip'); const r = c.getBoundingClientRect(); c.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + 0.5, clientY: r.top + 1})); return c.title; })()`, false)
	if cells != n || len(rows) < 2 || "[0] = "+rows[1][1] != hover {
		t.Errorf("the strip %q: %d values in its table, %d in its label; first cell %q, the hover %q", name, cells, n, rows[1][1], hover)
	}
	t.Logf("a strip's values:\n%s", tab.dump(0, 4))
}

// A lesson's question is a group named by the question, its choices
// radio buttons inside it.
func TestLessonQuestionIsANamedGroup(t *testing.T) {
	ctx, base := browserWith(t, Config{Embedded: lessonModels()})
	do(t, ctx, chromedp.Navigate(base+"/lessons/logits-and-softmax"), chromedp.WaitVisible(chromedp.CSS(`a[data-action="step"]`)))
	click(t, ctx, `a[data-action="step"]`) // its second step asks which token comes next
	do(t, ctx, chromedp.WaitVisible(chromedp.CSS(`[data-testid="question"]`)))
	q := eval[string](t, ctx, `document.querySelector('[data-testid="question"] legend').textContent.trim()`, false)
	groups := axTree(t, ctx).find(func(a *axNode) bool { return a.role == "group" && a.name == q })
	if len(groups) != 1 {
		t.Fatalf("%d groups named %q", len(groups), q)
	}
	radios := groups[0].find(func(a *axNode) bool { return a.role == "radio" })
	if n := eval[int](t, ctx, `document.querySelectorAll('[data-testid="choice"]').length`, false); len(radios) != n || n < 2 {
		t.Errorf("%d radios in the group, %d choices", len(radios), n)
	}
	t.Logf("the lesson's question:\n%s", groups[0].dump(0, 8))
}

// A room's poll: the options are toggle buttons in a group named by the
// question; after the student presses one, the tree says it is pressed
// and the others are not.
func TestPollOptionsArePressed(t *testing.T) {
	actx := chromeAlloc(t)
	live, addr := startLive(t, "127.0.0.1:0", t.TempDir())
	t.Cleanup(func() { live.stop() })
	base := "http://" + addr
	teach, cancelT := chromedp.NewContext(actx)
	defer cancelT()
	teach, cancelTT := context.WithTimeout(teach, 120*time.Second)
	defer cancelTT()
	do(t, teach, chromedp.Navigate(base+"/classroom"),
		chromedp.Click(chromedp.CSS(`[data-testid="start-room"][data-lesson="logits-and-softmax"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="join-code"]`)))
	code := eval[string](t, teach, `document.querySelector('[data-testid="join-code"]').textContent.trim()`, false)
	if _, ok := classroom.NormalizeCode(code); !ok {
		t.Fatalf("join code %q", code)
	}
	student, cancelS := chromedp.NewContext(teach, chromedp.WithNewBrowserContext())
	defer cancelS()
	do(t, student, chromedp.Navigate(base+"/classroom"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="join-input"]`), code),
		chromedp.Submit(chromedp.CSS(`[data-testid="join-input"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="follow-state"]`)))
	waitJS(t, teach, "the student in the room", `document.querySelector('[data-testid="class-count"]').dataset.connected === "1"`)
	do(t, teach, chromedp.Click(chromedp.CSS(`[data-action="lesson-next"]`)))
	waitJS(t, student, "the poll", `document.querySelectorAll('[data-testid="poll-option"]').length === 3`)
	pressed := func() map[string]string {
		q := eval[string](t, student, `document.getElementById('poll-question').textContent.trim()`, false)
		gs := axTree(t, student).find(func(a *axNode) bool { return a.role == "group" && a.name == q })
		if len(gs) != 1 {
			t.Fatalf("%d groups named by the question %q", len(gs), q)
		}
		out := map[string]string{}
		for _, b := range gs[0].find(func(a *axNode) bool { return a.role == "button" || a.role == "toggleButton" }) {
			out[b.name] = b.props["pressed"]
		}
		return out
	}
	before := pressed()
	do(t, student, chromedp.Click(chromedp.CSS(`[data-testid="poll-option"][data-answer=" Par"]`)))
	waitJS(t, student, "the answer confirmed", `document.querySelector('[data-testid="poll-option"][data-answer=" Par"]').getAttribute('aria-pressed') === "true"`)
	after := pressed()
	for name, p := range after {
		want := fmt.Sprint(strings.Contains(name, `" Par"`))
		if p != want || before[name] != "false" {
			t.Errorf("option %q: pressed %q before the click and %q after, want false then %s", name, before[name], p, want)
		}
	}
	if len(after) != 3 {
		t.Errorf("%d options in the tree: %v", len(after), after)
	}
	screenshot(t, student, "poll-pressed")
	t.Logf("the poll after the student's answer: %v", after)
}

package views

import (
	"math"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
	"github.com/google/go-cmp/cmp"
)

// text is a selection's text with its runs of white space made one space.
func text(s *goquery.Selection) string { return strings.Join(strings.Fields(s.Text()), " ") }

// State that a panel shows by colour, a line or an outline is in its
// text too (WCAG 1.3.1): the element with the state says it, and one
// without the state does not.
func TestStateIsInTheText(t *testing.T) {
	nan := float32(math.NaN())
	cases := []struct {
		name       string
		c          templ.Component
		with, want string // the element with the state, and its text
		without    string // an element without it: its text lacks the word
		word       string
	}{
		{"softmax: removed by the chain", SoftmaxView(&SoftmaxPanel{Vocab: 3, Kept: 1, Top: []Bar{{ID: 1, Piece: `"a"`, Value: .6}, {ID: 2, Piece: `"b"`, Value: .3, Out: true}}}),
			`tr.out td:first-child`, `"b" removed`, `tr[data-token-id="1"] td:first-child`, "removed"},
		{"KV cache: the row appended", KVView(&KVPanel{Layers: []KVLayer{{Layer: 0}}, Len: 2, Positions: []KVPos{{Pos: 0, Token: `"a"`}, {Pos: 1, Token: `"b"`, New: true}}}),
			`tr.new td:nth-child(3)`, `new`, `tr[data-pos="0"] td:nth-child(3)`, "new"},
		{"logit lens: the final prediction", LogitsView(&LogitsPanel{Lens: &LensGrid{Positions: []string{`"a"`}, Final: `"x"`, Rows: []LensRow{{Layer: 1, Cells: []LensCell{{Piece: `"y"`, P: .2}}, FinalRank: 2}, {Layer: 2, Cells: []LensCell{{Piece: `"x"`, P: .5, Final: true}}, FinalRank: 1}}}}),
			`td.final`, `"x" 50.00% final`, `[data-testid="lens-row"]:nth-child(2) td:not(.num)`, "final"},
		{"sample: the chosen candidate", SampleView(&SamplePanel{U: .7, Chosen: Bar{ID: 3, Piece: `"c"`, Value: .4}, CDF: []CDFBar{{ID: 2, Piece: `"b"`, P: .6, To: .6}, {ID: 3, Piece: `"c"`, P: .4, From: .6, To: 1, Chosen: true}}}),
			`[data-testid="cdf-row"][data-token-id="3"] td:last-child`, `chosen`, `[data-testid="cdf-row"][data-token-id="2"]`, "chosen"},
		{"compare: the lane's chosen candidate", CompareResult(&CompareView{Lanes: []LaneView{{Current: &LaneStepView{Greedy: true, Top: []Bar{{ID: 5, Piece: `"e"`, Value: .7, Chosen: true}, {ID: 6, Piece: `"f"`, Value: .3}}}}}}),
			`[data-testid="lane-candidate"][data-chosen="true"] td:first-child`, `"e" chosen`, `[data-testid="lane-candidate"][data-chosen="false"] td:first-child`, "chosen"},
		{"embed: the row looked up", EmbedView(&EmbedPanel{Table: []VecRow{{Label: `4 "d"`, Values: []float32{1}}, {Label: `5 "e"`, Values: []float32{2}}}, Lit: 1}),
			`.trow[aria-current="true"] small`, `5 "e" (looked up)`, `.trow[data-lit="false"] small`, "looked up"},
		{"sampler funnel: the step on screen", SamplerView(&SamplerPanel{Index: 1, Count: 2, Name: "top-p", Funnel: []MapFilter{{Name: "top-k", Setting: "40", In: 100, Out: 40}, {Name: "top-p", Setting: "0.9", In: 40, Out: 3}}}),
			`g[aria-current="step"] title`, `2. top-p 40 → 3 (setting 0.9): 40 candidates in, 3 kept; this step`, `g[data-goto-filter="1"] title`, "this step"},
		{"attention: the current row", AttentionView(&AttentionPanel{Layers: 1, Heads: 1, QueryLabels: []string{`"a"`, `"b"`}, KeyLabels: []string{`"a"`, `"b"`}, Cells: [][]float32{{1, nan}, {.4, .6}}, Current: 1, Max: 1}),
			`[data-testid="attn-row"]:last-child th`, `1 "b" (current)`, `[data-testid="attn-row"]:nth-child(2) th`, "current"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := render(t, tc.c)
			if got := text(doc.Find(tc.with)); got != tc.want {
				t.Errorf("%s reads %q, want %q", tc.with, got, tc.want)
			}
			other := doc.Find(tc.without)
			if other.Length() == 0 || strings.Contains(text(other), tc.word) {
				t.Errorf("%s (%d found) reads %q: the word %q marks the wrong element", tc.without, other.Length(), text(other), tc.word)
			}
		})
	}
}

// The attention heatmap's table has a row per query token and a column
// per key, its cells the panel's values (blank where masked), a caption
// naming the layer and head, and a summary sentence of where the
// current token looks.
func TestAttentionTable(t *testing.T) {
	nan := float32(math.NaN())
	a := &AttentionPanel{Layer: 1, Layers: 2, Head: 2, Heads: 4, QueryLabels: []string{`"x"`, `"y"`, `"z"`}, KeyLabels: []string{`"x"`, `"y"`, `"z"`},
		Cells: [][]float32{{1, nan, nan}, {.25, .75, nan}, {.1, .612, .288}}, Current: 2, Max: 1, FocusKey: `"y"`, FocusPos: 1, FocusW: .612}
	doc := render(t, AttentionView(a))
	tab := doc.Find(`[data-testid="attn-table"] table`)
	if c := text(tab.Find("caption")); !strings.HasPrefix(c, "Layer 2, head 3: attention weights") {
		t.Errorf("caption %q", c)
	}
	var got [][]string
	tab.Find("tr").Each(func(_ int, r *goquery.Selection) {
		var row []string
		r.Children().Each(func(_ int, c *goquery.Selection) { row = append(row, text(c)) })
		got = append(got, row)
	})
	want := [][]string{
		{`query \ key`, `0 "x"`, `1 "y"`, `2 "z"`},
		{`0 "x"`, "1.000", "", ""},
		{`1 "y"`, "0.250", "0.750", ""},
		{`2 "z" (current)`, "0.100", "0.612", "0.288"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the table (-want +got):\n%s", diff)
	}
	if s := text(doc.Find(`[data-testid="attn-summary"]`)); s != `Head 3 puts 61.20% of the current token's attention ("z", position 2) on "y" (position 1).` {
		t.Errorf("summary %q", s)
	}
	if doc.Find(`[data-testid="attn-table-cut"]`).Length() != 0 {
		t.Error("a 3 × 3 table says it leaves something out")
	}
}

// A long prompt's attention table keeps to its bounds and says what it
// leaves out: the last rows (the current one among them) and the last keys.
func TestAttentionTableBounded(t *testing.T) {
	n := 120
	a := &AttentionPanel{Layers: 1, Heads: 1, Current: n - 1, Max: 1}
	for i := range n {
		a.QueryLabels = append(a.QueryLabels, "q")
		a.KeyLabels = append(a.KeyLabels, "k")
		row := make([]float32, n)
		row[i] = 1
		a.Cells = append(a.Cells, row)
	}
	doc := render(t, AttentionView(a))
	rows, cols := doc.Find(`[data-testid="attn-row"]`).Length(), doc.Find(`[data-testid="attn-row"]`).First().Find("td").Length()
	if rows*cols > maxHeatCells || cols != maxHeatCols || rows != maxHeatCells/maxHeatCols {
		t.Errorf("%d rows × %d columns, want %d × %d", rows, cols, maxHeatCells/maxHeatCols, maxHeatCols)
	}
	if last := text(doc.Find(`[data-testid="attn-row"]`).Last().Find("th")); last != "119 q (current)" {
		t.Errorf("the last row is %q", last)
	}
	if cut := text(doc.Find(`[data-testid="attn-table-cut"]`)); !strings.Contains(cut, "the first 95 query rows (positions 0–94); keys 0–79;") {
		t.Errorf("the sentence on what is left out: %q", cut)
	}
}

// A lesson's choices are a group named by the question (a fieldset and
// its legend), and a room's poll buttons are toggle buttons in a group
// named by the question, none pressed until the page marks the
// student's answer.
func TestQuestionsAreNamedGroups(t *testing.T) {
	doc := render(t, LessonStepPage(LessonPage{Question: &LessonQuestion{Text: "Which token comes next?", Choices: []string{" Par", " Lon"}}}))
	fs := doc.Find(`[data-testid="question"] fieldset`)
	if text(fs.ChildrenFiltered("legend")) != "Which token comes next?" || fs.Find(`input[type="radio"]`).Length() != 2 {
		t.Errorf("the lesson's question: legend %q, %d radios in its fieldset", text(fs.ChildrenFiltered("legend")), fs.Find(`input[type="radio"]`).Length())
	}
	doc = render(t, pollView(&RoomQuestion{Kind: "next-token", Text: "Which token comes next?", Choices: []PollChoice{{Answer: " Par", Label: `" Par"`}, {Answer: " Lon", Label: `" Lon"`}}}, TextSoFar{}))
	g := doc.Find(`[data-testid="poll-options"]`)
	by, _ := g.Attr("aria-labelledby")
	if role, _ := g.Attr("role"); role != "group" || text(doc.Find("#"+by)) != "Which token comes next?" {
		t.Errorf("the poll's group: role %q, named by #%s %q", role, by, text(doc.Find("#"+by)))
	}
	if n := g.Find(`button[aria-pressed="false"]`).Length(); n != 2 {
		t.Errorf("%d poll buttons with aria-pressed=false, want 2", n)
	}
}

// A part of the model map that shows a word has an accessible name that
// contains it (WCAG 2.5.3): "attn" is named "attn: layer 1 attention".
func TestModelMapNamesHoldTheirText(t *testing.T) {
	m := &ModelMap{Arch: "llama", Layers: 4, Embd: 64, FFN: 128, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 500, Tokens: 3,
		Filters: []MapFilter{{Name: "top-k", In: 500, Out: 40}}, Present: map[string]int{}, Here: Stage{Name: "mlp", Layer: 1, SamplerStep: -1}}
	doc := render(t, ModelMapView(m))
	n := 0
	doc.Find("g.part").Each(func(_ int, g *goquery.Selection) {
		shown := text(g.Find("text"))
		name, _ := g.Attr("aria-label")
		if shown != "" && !strings.Contains(name, shown) {
			t.Errorf("%s shows %q, named %q", g.AttrOr("data-testid", ""), shown, name)
		}
		n++
	})
	if name := doc.Find(`[data-testid="map-attention-1"]`).AttrOr("aria-label", ""); name != "attn: layer 1 attention" {
		t.Errorf("layer 1's attention is named %q", name)
	}
	if n < 10 {
		t.Errorf("%d parts", n)
	}
}

// The draw's table lists the first candidates and the chosen one, even
// when it comes later, and counts the rest.
func TestDrawTableKeepsTheChosen(t *testing.T) {
	s := &SamplePanel{U: .99}
	for i := range 40 {
		s.CDF = append(s.CDF, CDFBar{ID: int32(i), Piece: "t", P: .025, From: .025 * float64(i), To: .025 * float64(i+1), Chosen: i == 39})
	}
	doc := render(t, SampleView(s))
	rows := doc.Find(`[data-testid="cdf-row"]`)
	if rows.Length() != maxCDFRows+1 || text(rows.Last().Find("td").Last()) != "chosen" || text(rows.Last().Find("td").Eq(1)) != "39" {
		t.Errorf("%d rows, the last %q", rows.Length(), text(rows.Last()))
	}
	if want := "…and 23 more candidates, not listed (the picture above draws them)."; text(doc.Find(`[data-testid="cdf-table"] p.note`)) != want {
		t.Errorf("the note %q, want %q", text(doc.Find(`[data-testid="cdf-table"] p.note`)), want)
	}
}

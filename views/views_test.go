package views

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
	"github.com/google/go-cmp/cmp"
)

func render(t *testing.T, c templ.Component) *goquery.Document {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestPanelsCarryTestHooks(t *testing.T) {
	cases := []struct {
		stage string
		panel Panel
		check map[string]int // selector → count
	}{
		{"tokenize", &TokenizePanel{BOS: true, Groups: []TokenGroup{{Tokens: []Token{{ID: 1, Bytes: `"<s>"`, Show: "<s>", Added: true, Special: true}}},
			{Tokens: []Token{{ID: 403, Bytes: `" Once"`, Show: "·Once", End: 4}}}, {Bytes: true, Text: "猫", Tokens: []Token{{ID: 5}, {ID: 6}, {ID: 7}}}}},
			map[string]int{`[data-testid="token"][data-token-id="403"]`: 1, `[data-testid="token"]`: 5, `[data-testid="byte-group"] [data-testid="token"]`: 3, `.tag`: 1}},
		{"softmax", &SoftmaxPanel{Temperature: 1, Top: []Bar{{ID: 7, Value: 0.75}, {ID: 9, Value: 0.2}}, Rest: 1, RestP: 0.05, Sum: 1},
			map[string]int{`[data-testid="prob"][data-p="0.75"]`: 1, `[data-testid="prob-rest"]`: 1, `input[name="view_temperature"]`: 1}},
		{"sampler", &SamplerPanel{Name: "top-k", Kept: []Bar{{ID: 1, Value: 1}}, Removed: []Bar{{ID: 2, Removed: true}}, RemovedCount: 5},
			map[string]int{`tr.removed del`: 1, `[data-testid="kept"]`: 1}},
		{"sample", &SamplePanel{U: 0.3, Chosen: Bar{ID: 42, Value: 0.6}, CDF: []CDFBar{{ID: 42, To: 0.6, Chosen: true}, {ID: 3, From: 0.6, To: 1}}},
			map[string]int{`[data-testid="sampled-token"][data-token-id="42"]`: 1, `line`: 1}},
		{"attention", &AttentionPanel{Layers: 2, Heads: 2, QueryLabels: []string{"a", "b"}, KeyLabels: []string{"a", "b"}, Cells: [][]float32{{1, 0}, {0.4, 0.6}}, Max: 1},
			map[string]int{`[data-testid="attn-heatmap"][data-values="1 0;0.4 0.6"][data-klabels='["a","b"]']`: 1, `select[name="head"] option`: 2}},
	}
	for _, tc := range cases {
		doc := render(t, ExplorerView(Explorer{Stages: []Stage{{Name: tc.stage, Current: true, Layer: -1}}, Current: Stage{Name: tc.stage, Layer: -1}, Panel: tc.panel, URL: "/?x=1"}))
		if n := doc.Find(`[data-stage="` + tc.stage + `"]`).Length(); n != 1 {
			t.Errorf("%s: %d panels with data-stage", tc.stage, n)
		}
		if v, _ := doc.Find("[data-current-stage]").Attr("data-current-stage"); v != tc.stage || doc.Find("[data-current-stage]").Length() != 1 {
			t.Errorf("%s: data-current-stage %q", tc.stage, v)
		}
		for sel, want := range tc.check {
			if n := doc.Find(sel).Length(); n != want {
				t.Errorf("%s: %s matches %d, want %d", tc.stage, sel, n, want)
			}
		}
		for _, a := range []string{"step", "back", "next-token", "play", "reset"} {
			if doc.Find(`[data-action="`+a+`"]`).Length() != 1 {
				t.Errorf("control %s missing", a)
			}
		}
	}
	// errors are shown as alerts; values are escaped
	doc := render(t, ExplorerView(Explorer{Error: `<script>alert(1)</script>`}))
	if doc.Find("script").Length() != 0 || !strings.Contains(doc.Find(`[data-testid="error"]`).Text(), "<script>") {
		t.Error("error text not escaped")
	}
}

// The committed *_templ.go files are what `templ generate` makes of the
// committed .templ files.
func TestTemplGeneratedFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("short: skips building the templ tool")
	}
	tmp := t.TempDir()
	os.Mkdir(filepath.Join(tmp, "views"), 0o755) // generated code names files relative to the repo root
	srcs, _ := filepath.Glob("*.templ")
	for _, f := range srcs {
		b, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(tmp, "views", f), b, 0o644)
	}
	cmd := exec.Command("go", "tool", "templ", "generate", "-path", tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("templ generate: %v\n%s", err, out)
	}
	for _, f := range srcs {
		gen := strings.TrimSuffix(f, ".templ") + "_templ.go"
		want, _ := os.ReadFile(filepath.Join(tmp, "views", gen))
		got, err := os.ReadFile(gen)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `go tool templ generate` and commit", gen)
		}
	}
}

// Handouts print on white: a zero weight is white, a full one dark with
// white ink; a zero vector value is white.
func TestHandoutColours(t *testing.T) {
	if f, ink := lightSeq(0, 0, 1); f != "rgb(255,255,255)" || ink != "#000" {
		t.Errorf("zero weight: %s on %s", ink, f)
	}
	if f, ink := lightSeq(1, 0, 1); f == "rgb(255,255,255)" || ink != "#fff" {
		t.Errorf("full weight: %s on %s", ink, f)
	}
	if c := lightHeat(0, 1); c != "rgb(255,255,255)" {
		t.Errorf("zero value: %s", c)
	}
}

// The model map lays out 4 or 32 layers inside its drawing without parts
// overlapping, labelling at most about ten layers.
func TestModelMapShapes(t *testing.T) {
	for _, layers := range []int{1, 4, 12, 32, 80} {
		m := &ModelMap{Arch: "llama", Layers: layers, Embd: 4096, FFN: 11008, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 32000, Tokens: 7,
			Filters: []MapFilter{{Name: "top-k", In: 32000, Out: 40}, {Name: "temperature", In: 40, Out: 40}}, Present: map[string]int{}, Here: Stage{Name: "mlp", Layer: 3, SamplerStep: -1}}
		L := m.Layout()
		n, labels := 0, 0
		var prev MapPart
		for _, p := range L.Parts {
			if p.X < 0 || p.Y < 0 || p.X+p.W > L.W || p.Y+p.H > L.H {
				t.Errorf("%d layers: %s outside the drawing", layers, p.Key)
			}
			if p.Stage == "attention" || p.Stage == "mlp" {
				if n > 0 && p.X < prev.X+prev.W {
					t.Errorf("%d layers: %s overlaps %s", layers, p.Key, prev.Key)
				}
				prev = p
				n++
			}
		}
		for _, tx := range L.Texts {
			if strings.HasPrefix(tx.Label, "L") || strings.HasPrefix(tx.Label, "layer ") {
				labels++
			}
		}
		if n != 2*layers || labels > 11 || labels == 0 {
			t.Errorf("%d layers: %d block parts, %d layer labels", layers, n, labels)
		}
		var tags []string
		for _, p := range L.Parts {
			if p.Stage == "sampler" {
				tags = append(tags, p.Tag)
			}
		}
		if diff := cmp.Diff([]string{"top-k", "temperature"}, tags); diff != "" {
			t.Errorf("%d layers: the sampler chain's names (-want +got):\n%s", layers, diff)
		}
	}
}

// The sample panel's "what if?" sentence appears only with a branch to
// open: a sentence ending in a colon with nothing after it is a bug.
func TestSampleBranchSentence(t *testing.T) {
	for _, tt := range []struct {
		name  string
		cdf   []CDFBar
		links int
	}{
		{"greedy", []CDFBar{{ID: 42, To: 1, Chosen: true, Branch: "/compare?x"}}, 0},
		{"no links", []CDFBar{{ID: 42, To: 0.6, Chosen: true}, {ID: 3, From: 0.6, To: 1}}, 0},
		{"two links", []CDFBar{{ID: 42, To: 0.5, Chosen: true, Branch: "/compare?a"}, {ID: 3, From: 0.5, To: 0.8, Branch: "/compare?b"}, {ID: 4, From: 0.8, To: 1, Branch: "/compare?c"}}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := render(t, SampleView(&SamplePanel{U: 0.3, Chosen: Bar{ID: 42}, CDF: tt.cdf}))
			sentence := doc.Find(`[data-testid="branches"]`)
			if got := sentence.Find(`[data-testid="branch"]`).Length(); got != tt.links {
				t.Errorf("%d branch links, want %d", got, tt.links)
			}
			if (sentence.Length() == 1) != (tt.links > 0) || strings.Contains(doc.Text(), "Open a branch") != (tt.links > 0) {
				t.Errorf("the branch sentence shown: %v, with %d links", sentence.Length() == 1, tt.links)
			}
		})
	}
}

// The attention heatmap carries its colour scale: weights 0 to 1, scores
// their view's range, each end labelled.
func TestHeatLegend(t *testing.T) {
	for _, tt := range []struct {
		name     string
		a        AttentionPanel
		min, max string
		caption  string
	}{
		{"weights", AttentionPanel{Min: 0, Max: 1}, "0.0000", "1.0000", "0 to 1 in every view"},
		{"scores", AttentionPanel{Min: -3.5, Max: 2.25, ShowScores: true}, "-3.5000", "2.2500", "this view's range"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := render(t, heatLegend(&tt.a))
			lg := doc.Find(`[data-testid="heat-legend"]`)
			texts := lg.Find("text").Map(func(_ int, s *goquery.Selection) string { return s.Text() })
			if diff := cmp.Diff([]string{tt.min, tt.max}, texts); diff != "" {
				t.Errorf("legend ends (-want +got):\n%s", diff)
			}
			if !strings.Contains(lg.Find("figcaption").Text(), tt.caption) {
				t.Errorf("caption %q", lg.Find("figcaption").Text())
			}
		})
	}
}

// Counts read as English whatever the number: "1 candidate", "the first
// position is not drawn", never "1 candidates" or "the first 1 positions".
func TestCountsReadAsEnglish(t *testing.T) {
	tests := []struct {
		name string
		c    templ.Component
		want string
	}{
		{"one candidate kept", SamplerView(&SamplerPanel{Name: "top-k", Before: 1, After: 1}), "1 candidate in, 1 kept, 0 removed"},
		{"many candidates", SamplerView(&SamplerPanel{Name: "top-k", Before: 40, After: 3, RemovedCount: 37}), "40 candidates in, 3 kept, 37 removed"},
		{"a no-op on one", SamplerView(&SamplerPanel{Name: "min-p", Skipped: true, Before: 1}), "every candidate passes (1 candidate)"},
		{"one position hidden", EmbedView(&EmbedPanel{NotDrawn: 1, Rows: make([]VecRow, 2)}), "The first position is not drawn; these are the last 2."},
		{"many positions hidden", EmbedView(&EmbedPanel{NotDrawn: 30, Rows: make([]VecRow, 64)}), "The first 30 positions are not drawn; these are the last 64."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Join(strings.Fields(render(t, tt.c).Text()), " ")
			if !strings.Contains(text, tt.want) {
				t.Errorf("%q lacks %q", text, tt.want)
			}
			for _, bad := range []string{" 1 candidates", "first 1 positions", "1 ids"} {
				if strings.Contains(text, bad) {
					t.Errorf("%q says %q", text, bad)
				}
			}
		})
	}
}

// The lit path from one stage to the next crosses no part of the map
// (and so no part's label): it leaves and enters through the parts'
// edges and runs between them.
func TestMapFlowCrossesNoPart(t *testing.T) {
	stages := []Stage{{Name: "tokenize", Layer: -1, SamplerStep: -1}, {Name: "embed", Layer: -1, SamplerStep: -1}}
	for l := range 4 {
		stages = append(stages, Stage{Name: "attention", Layer: l, SamplerStep: -1}, Stage{Name: "mlp", Layer: l, SamplerStep: -1})
	}
	stages = append(stages, Stage{Name: "logits", Layer: -1, SamplerStep: -1}, Stage{Name: "softmax", Layer: -1, SamplerStep: -1})
	for f := range 3 {
		stages = append(stages, Stage{Name: "sampler", Layer: -1, SamplerStep: f})
	}
	stages = append(stages, Stage{Name: "sample", Layer: -1, SamplerStep: -1}, Stage{Name: "kv", Layer: -1, SamplerStep: -1})
	for i := 1; i < len(stages); i++ {
		m := &ModelMap{Arch: "gpt2", Layers: 4, Embd: 192, FFN: 768, Heads: 4, KVHeads: 4, HeadDim: 48, Vocab: 1024, Tokens: 7,
			Filters: []MapFilter{{Name: "top-k", In: 1024, Out: 40}, {Name: "top-p", In: 40, Out: 12}, {Name: "temperature", In: 12, Out: 12}},
			Present: map[string]int{}, Prev: stages[i-1], Here: stages[i], HasPrev: true}
		L := m.Layout()
		var pts [][2]float64
		for _, f := range strings.Fields(strings.NewReplacer("M", " ", "L", " ").Replace(L.Flow)) {
			pts = append(pts, [2]float64{})
			fmt.Sscan(f, &pts[len(pts)-1][0])
		}
		var xy [][2]float64
		for j := 0; j+1 < len(pts); j += 2 {
			xy = append(xy, [2]float64{pts[j][0], pts[j+1][0]})
		}
		if len(xy) < 2 {
			t.Fatalf("%s → %s: no path (%q)", stages[i-1].Name, stages[i].Name, L.Flow)
		}
		for j := 1; j < len(xy); j++ {
			a, b := xy[j-1], xy[j]
			for _, p := range L.Parts {
				// a segment crossing the part's inside (a point strictly in it)
				for s := 0.05; s < 1; s += 0.05 {
					x, y := a[0]+s*(b[0]-a[0]), a[1]+s*(b[1]-a[1])
					if x > p.X+0.5 && x < p.X+p.W-0.5 && y > p.Y+0.5 && y < p.Y+p.H-0.5 {
						t.Fatalf("%s → %s: the path crosses %s at (%.0f, %.0f): %s", stages[i-1].Name, stages[i].Name, p.Key, x, y, L.Flow)
					}
				}
			}
		}
	}
}

// The glossary explains each term in one sentence; Term shows it on the
// word and leaves a word the glossary lacks as plain text.
func TestGlossary(t *testing.T) {
	for term, s := range Glossary {
		if s == "" || !strings.HasSuffix(s, ".") || strings.Count(strings.TrimSuffix(s, "."), ". ") > 0 || len(s) > 260 {
			t.Errorf("%s: %q is not one short sentence", term, s)
		}
	}
	doc := render(t, Term("TTFT"))
	if d := doc.Find(`dfn.term[data-term="TTFT"]`); d.Length() != 1 || d.AttrOr("title", "") != Glossary["TTFT"] || d.AttrOr("tabindex", "") != "0" {
		t.Errorf("a known term: %s", doc.Text())
	}
	if doc := render(t, Term("flux capacitor")); doc.Find("dfn").Length() != 0 || strings.TrimSpace(doc.Text()) != "flux capacitor" {
		t.Errorf("an unknown word: %q", doc.Text())
	}
}

// The residual stream's growth across a layer is explained beside the
// norms, naming the factor.
func TestNormNote(t *testing.T) {
	for _, tt := range []struct {
		before, after float32
		want          string
	}{
		{1.83, 71.5, "39.1× longer"},
		{10, 4, "2.5× shorter"},
		{10, 12, "how much the length changed"},
	} {
		if got := normNote(tt.before, tt.after); !strings.Contains(got, tt.want) {
			t.Errorf("%g → %g: %q, want %q", tt.before, tt.after, got, tt.want)
		}
	}
}

// Lesson narration explains its words from the glossary: each term's
// first use in a paragraph (a capital or a plural too), whole words only,
// site pages still linked.
func TestGlossedNarration(t *testing.T) {
	segs := Glossed("Logits become probabilities through softmax, then softmax again; the tokenizer's tokens and the Serving page.")
	var got []string
	for _, s := range segs {
		switch {
		case s.Term != "":
			got = append(got, "["+s.Term+":"+s.Text+"]")
		case s.Href != "":
			got = append(got, "<"+s.Text+">")
		}
	}
	want := []string{"[logits:Logits]", "[softmax:softmax]", "[token:tokens]", "<Serving page>"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("marked (-want +got):\n%s", diff)
	}
	var all strings.Builder
	for _, s := range segs {
		all.WriteString(s.Text)
	}
	if all.String() != "Logits become probabilities through softmax, then softmax again; the tokenizer's tokens and the Serving page." {
		t.Errorf("the text changed: %q", all.String())
	}
}

// A free-text poll's box takes the answer length the server allows.
func TestPollInputTakesTheServersLimit(t *testing.T) {
	doc := render(t, pollView(&RoomQuestion{AnswerMax: 200, Kind: "next-token", Text: "Which token?"}, TextSoFar{}))
	if got, _ := doc.Find(`[data-testid="poll-input"]`).Attr("maxlength"); got != "200" {
		t.Errorf("maxlength %q, want 200", got)
	}
}

// A question shows the text it is about, above it: the prompt, then what
// the model wrote set apart, exactly as they are (no space added between
// them); nothing without a prompt.
func TestQuestionText(t *testing.T) {
	q := &RoomQuestion{Kind: "next-token", Text: "Which token comes next?", Choices: []PollChoice{{Answer: " Sa", Label: `" Sa"`, Vals: `{}`}}}
	for _, tt := range []struct {
		name            string
		soFar           TextSoFar
		code, written   string
		label           string
		shown, revealed bool
	}{
		{"the prompt", TextSoFar{Prompt: " Ab dog Port"}, " Ab dog Port", "", "The prompt:", true, false},
		{"and what the model wrote", TextSoFar{Prompt: "Once upon", Generated: " a time"}, "Once upon a time", " a time", "The text so far, the prompt then what the model wrote:", true, false},
		{"after the reveal", TextSoFar{Prompt: "<b>x</b>", Generated: "猫"}, "<b>x</b>猫", "猫", "The text so far, the prompt then what the model wrote:", true, true},
		{"no prompt", TextSoFar{}, "", "", "", false, false},
	} {
		q.Revealed = tt.revealed
		doc := render(t, pollView(q, tt.soFar))
		p := doc.Find(`[data-testid="poll"] > [data-testid="question-prompt"]`)
		if (p.Length() == 1) != tt.shown {
			t.Errorf("%s: %d question texts, want shown %v", tt.name, p.Length(), tt.shown)
			continue
		}
		if !tt.shown {
			continue
		}
		if code, label := p.Find("code").Text(), p.Find(".note").Text(); code != tt.code || label != tt.label {
			t.Errorf("%s: %q %q, want %q %q", tt.name, label, code, tt.label, tt.code)
		}
		if w := p.Find(`[data-testid="so-far-generated"]`); w.Text() != tt.written || (w.Length() == 1) != (tt.written != "") {
			t.Errorf("%s: written %q (%d), want %q", tt.name, w.Text(), w.Length(), tt.written)
		}
		if p.Next().Text() != q.Text {
			t.Errorf("%s: the question does not follow its text: %q", tt.name, p.Next().Text())
		}
	}
}

// Narration above an unanswered question carries no glossary sentence
// (one could answer it); once answered, or with no question, it does.
func TestNarrationGlossedOnlyWhenItCannotSpoil(t *testing.T) {
	para := "The softmax panel has a temperature slider. Before you move it, predict what it does."
	q := &LessonQuestion{Kind: "choice", Text: "What does temperature do to the ranking of tokens?"}
	for _, tt := range []struct {
		name     string
		answered bool
		terms    int
	}{{"unanswered", false, 0}, {"answered", true, 2}} {
		t.Run(tt.name, func(t *testing.T) {
			q.Answered = tt.answered
			doc := render(t, LessonStepPage(LessonPage{Name: "t", Title: "T", Steps: 1, Narration: []string{para}, Question: q}))
			if n := doc.Find(`main p dfn.term`).Length(); n != tt.terms {
				t.Errorf("%d glossed terms in the narration, want %d", n, tt.terms)
			}
		})
	}
}

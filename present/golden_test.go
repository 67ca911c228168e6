package present

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
	"github.com/google/go-cmp/cmp"

	"stepthrough/models/modelstest"
	"stepthrough/session"
	"stepthrough/spec"
	"stepthrough/views"
	"stepthrough/views/htmltest"
)

// Every stage's panel, as the Explorer draws it, against its golden
// outline (testdata/panels; go test ./present -run TestPanelSnapshots
// -update rewrites them): the first of each kind in a plain greedy run
// and in a speculative one, and the model map at the first attention.
func TestPanelSnapshots(t *testing.T) {
	reg := modelstest.Lesson(t)
	plain, specRun := run("Lily saw a big"), run("Lily saw a big")
	plain.Sampler.Temperature, specRun.Sampler.Temperature = 0, 0
	specRun.Draft, specRun.DraftK = "lesson-draft.gguf", 3
	seen := map[string]bool{}
	for _, r := range []spec.Run{plain, specRun} {
		se := session.New("golden", "", reg)
		defer se.Close()
		if err := se.Run(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		steps := 1
		if r.Draft != "" {
			steps = 2 // token step 2 is the first round
		}
		for {
			e := Explorer(se)
			if e.Step >= steps || e.End {
				break
			}
			if k := e.Current.Name; !seen[k] && e.Panel != nil {
				seen[k] = true
				panel := e.Panel
				if l, ok := panel.(*views.LogitsPanel); ok { // the lens's early layers predict near-ties: TestLensGrid checks it
					c := *l
					c.Lens, panel = nil, &c
				}
				t.Run(k, func(t *testing.T) {
					htmltest.Golden(t, "panels/"+k, outline(t, panel.Component()))
					if k == "attention" {
						htmltest.Golden(t, "panels/model-map", outline(t, views.ModelMapView(e.Map)))
					}
				})
			}
			if err := se.Act(context.Background(), "step", nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(seen) != 13 {
		t.Errorf("snapshots of %d stage kinds, want all 13: %v", len(seen), seen)
	}
}

// outline renders a component and outlines it.
func outline(t *testing.T, c templ.Component) string {
	t.Helper()
	var b bytes.Buffer
	if err := c.Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	o, err := htmltest.Outline(&b)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(o, "\n"); n < 3 {
		t.Fatalf("an outline of %d lines:\n%s", n, o)
	}
	return o
}

// The settings form's fields are exactly the keys spec's form
// codec reads: none written differently in the template, none missing.
func TestSettingsFormNamesAreSpecKeys(t *testing.T) {
	var b bytes.Buffer
	page := views.Page{Models: []string{"lesson.gguf"}, Settings: Form(run("x"))}
	if err := views.SettingsForm(page).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(&b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	doc.Find("form.settings [name]").Each(func(_ int, s *goquery.Selection) { got = append(got, s.AttrOr("name", "")) })
	want := spec.FormKeys()
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("form fields (-spec +template):\n%s", diff)
	}
}

package present

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"stepthrough/engine/sample"
	"stepthrough/models/modelstest"
	"stepthrough/session"
	"stepthrough/views"
)

// Switching a head off from the attention panel reruns the step with the
// head off: the Explorer shows the run's next-token distribution before
// (the same step of a run without the edit) and after (the trace's, with
// it), the model map marks the layer, and switching it back restores the
// run; the link carries the edit.
func TestInterveneFromThePanel(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	r := run("The capital of France is")
	r.Sampler.Temperature = 0
	plain := session.New("plain", "", reg)
	defer plain.Close()
	if err := plain.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	se := session.New("edit", "", reg)
	defer se.Close()
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := se.Act(ctx, "goto", getter(map[string]string{"stage": "attention", "layer": "2"})); err != nil {
		t.Fatal(err)
	}
	a, ok := Explorer(se).Panel.(*views.AttentionPanel)
	if !ok || a.Toggle != "L2H1" || a.HeadOff {
		t.Fatalf("attention panel: %+v", a)
	}
	toggle := getter(map[string]string{"toggle": a.Toggle})
	if err := se.Act(ctx, "ablate", toggle); err != nil {
		t.Fatal(err)
	}
	e := Explorer(se)
	if e.Edits == nil || e.Edits.Edits != "L2H1" || len(e.Edits.Items) != 1 || e.Edits.Items[0] != "layer 2, head 1 switched off" {
		t.Fatalf("edit effect %+v", e.Edits)
	}
	if a, _ := e.Panel.(*views.AttentionPanel); a == nil || !a.HeadOff || e.Current.Name != "attention" || e.Current.Layer != 1 {
		t.Errorf("after the rerun: at %+v, head off %v", e.Current, a != nil && a.HeadOff)
	}
	if len(e.Map.Off) != 1 || !e.Map.Off["attention-2"] {
		t.Errorf("the map marks %v, want attention-2", e.Map.Off)
	}
	// before: the plain run's probabilities; after: the trace's
	before := sample.Probabilities(plain.Snapshot().Cursor.Steps[0].Logits.Logits, 1)
	after := sample.Probabilities(se.Snapshot().Cursor.Steps[0].Logits.Logits, 1)
	top := sample.TopN(before, 1)[0]
	if math.Abs(e.Edits.WasP-float64(before[top])) > 1e-6 || math.Abs(e.Edits.NowP-float64(after[top])) > 1e-6 {
		t.Errorf("the top token's p: shown %.6f → %.6f, engine %.6f → %.6f", e.Edits.WasP, e.Edits.NowP, before[top], after[top])
	}
	if e.Edits.KL <= 0 || e.Edits.WasP == e.Edits.NowP {
		t.Errorf("switching the head off changed nothing: KL %g", e.Edits.KL)
	}
	if got := se.Spec().Ablate.String(); got != "L2H1" {
		t.Errorf("the link carries %q", got)
	}
	// back on: the run is the plain one again
	if err := se.Act(ctx, "ablate", toggle); err != nil {
		t.Fatal(err)
	}
	if e := Explorer(se); e.Edits != nil || se.Spec().Ablate != nil {
		t.Errorf("after switching back: %+v, %v", e.Edits, se.Spec().Ablate)
	}
	if err := se.Act(ctx, "ablate", getter(map[string]string{"toggle": "L9H1"})); err == nil {
		t.Error("a head of layer 9 of a smaller model switched off")
	}
}

// The residual add on the MLP panel offers to switch off what the layer's
// attention adds to the stream: the step reruns with it off, the panel
// says so, the stream after attention changes, and the map marks it.
func TestInterveneOnTheResidualStream(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	se := session.New("resid", "", reg)
	defer se.Close()
	r := run("The capital of France is")
	r.Sampler.Temperature = 0
	r.View.StageName, r.View.Layer = "mlp", 1
	if err := se.Open(ctx, r); err != nil {
		t.Fatal(err)
	}
	m, ok := Explorer(se).Panel.(*views.MLPPanel)
	if !ok || m.AttnToggle != "L2attn" || m.AttnOff || len(m.ResidBefore.Values) == 0 {
		t.Fatalf("MLP panel: %+v", m)
	}
	before := slices.Clone(m.ResidBefore.Values)
	if err := se.Act(ctx, "ablate", getter(map[string]string{"toggle": m.AttnToggle})); err != nil {
		t.Fatal(err)
	}
	e := Explorer(se)
	after, ok := e.Panel.(*views.MLPPanel)
	if !ok || !after.AttnOff || e.Edits == nil || e.Edits.Edits != "L2attn" || !e.Map.Off["attention-2"] {
		t.Fatalf("after switching layer 2's attention off: panel %T off=%v, edits %+v, map %v", e.Panel, ok && after.AttnOff, e.Edits, e.Map.Off)
	}
	if slices.Equal(before, after.ResidBefore.Values) {
		t.Error("the residual stream after attention did not change with the attention switched off")
	}
}

// The logits panel shows the logit lens of the lesson model: one row per
// layer, the last layer's cells the model's own predictions, the final
// prediction ranked first at the last layer; with a layer's MLP switched
// off the lens shows it too (the rows change).
func TestLensGrid(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	se := session.New("lens", "", reg)
	defer se.Close()
	r := run("The capital of France is")
	r.Sampler.Temperature = 0
	r.View.StageName, r.View.Layer = "logits", -1
	if err := se.Open(ctx, r); err != nil {
		t.Fatal(err)
	}
	p, ok := Explorer(se).Panel.(*views.LogitsPanel)
	if !ok || p.Lens == nil {
		t.Fatalf("logits panel %T without a lens", Explorer(se).Panel)
	}
	g := p.Lens
	sn := se.Snapshot()
	if len(g.Rows) != sn.Model.Config.Layers || len(g.Positions) != lensCols {
		t.Fatalf("%d rows, %d columns", len(g.Rows), len(g.Positions))
	}
	last := g.Rows[len(g.Rows)-1]
	if last.FinalRank != 1 {
		t.Errorf("the final prediction ranks %d at the last layer", last.FinalRank)
	}
	for c, cell := range last.Cells {
		if !cell.Final {
			t.Errorf("column %d: the last layer's %s is not the model's prediction", c, cell.Piece)
		}
	}
	logits := sn.Cursor.Steps[0].Logits.Logits
	if want := strconv.Quote(sn.Model.Tokenizer.Display(sample.TopN(logits, 1)[0])); last.Cells[len(last.Cells)-1].Piece != want || g.Final != want {
		t.Errorf("the last cell %s, final %s; the logits' top %s", last.Cells[len(last.Cells)-1].Piece, g.Final, want)
	}
	if err := r.SetInterventions("L1mlp", "", ""); err != nil {
		t.Fatal(err)
	}
	if err := se.Open(ctx, r); err != nil {
		t.Fatal(err)
	}
	q := Explorer(se).Panel.(*views.LogitsPanel).Lens
	if q == nil || slices.EqualFunc(q.Rows[0].Cells, g.Rows[0].Cells, func(a, b views.LensCell) bool { return a == b }) {
		t.Error("switching layer 1's MLP off left layer 1's lens as it was")
	}
}

// The MLP panel offers its most active units: switching one off reruns
// the step with that unit at zero, listed first and marked off, and the
// box says what it changed.
func TestInterveneOnAnMLPUnit(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	se := session.New("unit", "", reg)
	defer se.Close()
	r := run("The capital of France is")
	r.Sampler.Temperature = 0
	r.View.StageName, r.View.Layer = "mlp", 2
	if err := se.Open(ctx, r); err != nil {
		t.Fatal(err)
	}
	m, ok := Explorer(se).Panel.(*views.MLPPanel)
	if !ok || len(m.TopUnits) != topUnits {
		t.Fatalf("MLP panel %T with %d units offered", Explorer(se).Panel, len(m.TopUnits))
	}
	u := m.TopUnits[0]
	if u.Off || u.Value == 0 || u.Toggle != fmt.Sprintf("L3U%d", u.Unit) {
		t.Fatalf("the most active unit %+v", u)
	}
	if err := se.Act(ctx, "ablate", getter(map[string]string{"toggle": u.Toggle})); err != nil {
		t.Fatal(err)
	}
	e := Explorer(se)
	m = e.Panel.(*views.MLPPanel)
	if got := m.TopUnits[0]; got.Unit != u.Unit || !got.Off || got.Value != 0 {
		t.Errorf("after switching unit %d off the panel lists %+v first", u.Unit, got)
	}
	if e.Edits == nil || e.Edits.Items[0] != fmt.Sprintf("layer 3, MLP unit %d switched off", u.Unit) {
		t.Errorf("the box: %+v", e.Edits)
	}
}

// Steering from a link: the run adds the difference of two texts' mean
// residual streams after the layer; the box says so and shows what it
// changes; a steering of strength 0 changes nothing at all.
func TestSteerInTheExplorer(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	se := session.New("steer", "", reg)
	defer se.Close()
	r := run("Once upon a time, there was a")
	r.Sampler.Temperature = 0
	r.View.StageName, r.View.Layer = "logits", -1
	for _, tc := range []struct {
		steer string
		moves bool
	}{{"L2:happy|sad*8", true}, {"L2:happy|sad*0", false}} {
		if err := r.SetInterventions("", tc.steer, ""); err != nil {
			t.Fatal(err)
		}
		if err := se.Open(ctx, r); err != nil {
			t.Fatal(err)
		}
		e := Explorer(se)
		if e.Edits == nil || len(e.Edits.Items) != 1 || !strings.Contains(e.Edits.Items[0], `toward "happy" and away from "sad"`) {
			t.Fatalf("%s: the box %+v", tc.steer, e.Edits)
		}
		if moved := e.Edits.KL > 0; moved != tc.moves {
			t.Errorf("%s: KL %g", tc.steer, e.Edits.KL)
		}
		if !e.Map.Off["mlp-2"] {
			t.Errorf("%s: the map marks %v, want layer 2's output", tc.steer, e.Map.Off)
		}
	}
	if err := r.SetInterventions("", "L9:a|b*1", ""); err != nil {
		t.Fatal(err)
	}
	if err := se.Open(ctx, r); err == nil || !strings.Contains(err.Error(), "layers 1 to 4") {
		t.Errorf("a steering after layer 9 of 4: %v", err)
	}
}

// A run whose form names a reference text switches its heads off to their
// mean over that text: the box says so, the logits differ from both the
// intact run's and the zeroed run's, the link carries the text, and a
// text longer than the model's context is refused by name.
func TestMeanAblationFromTheForm(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	logits := func(ablate, mean string) ([]float32, *session.Session) {
		t.Helper()
		r := run("The capital of France is")
		r.Sampler.Temperature = 0
		if err := r.SetInterventions(ablate, "", mean); err != nil {
			t.Fatal(err)
		}
		se := session.New("mean", "", reg)
		t.Cleanup(se.Close)
		if err := se.Run(ctx, r); err != nil {
			t.Fatal(err)
		}
		return slices.Clone(se.Snapshot().Cursor.Steps[0].Logits.Logits), se
	}
	intact, _ := logits("", "")
	zeroed, _ := logits("L2H1", "")
	mean, se := logits("L2H1", "Once upon a time, a girl sat in the park.")
	if slices.Equal(mean, intact) || slices.Equal(mean, zeroed) {
		t.Fatalf("the mean ablation's logits equal the intact run's (%v) or the zeroed run's (%v)", slices.Equal(mean, intact), slices.Equal(mean, zeroed))
	}
	e := Explorer(se).Edits
	if e == nil || len(e.Items) != 1 || e.Items[0] != "layer 2, head 1 replaced by its mean over the reference text" || !strings.Contains(e.Edits, `mean over "Once upon a time`) {
		t.Errorf("edit effect %+v", e)
	}
	if q := se.Spec().Query(); q.Get("mean_over") != "Once upon a time, a girl sat in the park." {
		t.Errorf("the link carries mean_over=%q", q.Get("mean_over"))
	}
	r := run("The capital of France is")
	if err := r.SetInterventions("L2H1", "", strings.Repeat("q7 ", 330)); err != nil { // trimmed as a form is: 989 bytes, 990 tokens with BOS
		t.Fatal(err)
	}
	long := session.New("long", "", reg)
	defer long.Close()
	if err := long.Run(ctx, r); err == nil || !strings.Contains(err.Error(), "a reference text of 990 tokens") {
		t.Errorf("a reference text past the context: %v", err)
	}
}

// The form's steering example does what it is offered for, on the
// default model: on "She was very" it makes " happy" the likeliest token
// and " sad" less likely, without breaking the model (the example it
// replaced, L2:happy|sad*4, put "ican" on top at a KL of 2.76).
func TestSteerExample(t *testing.T) {
	reg := modelstest.Lesson(t)
	se := session.New("steer", "", reg)
	defer se.Close()
	r := run("She was very")
	r.Sampler.Temperature = 0
	r.View.StageName, r.View.Layer = "logits", -1
	if err := r.SetInterventions("", views.SteerExample, ""); err != nil {
		t.Fatal(err)
	}
	if err := se.Open(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	x := Explorer(se).Edits
	p := map[string][2]float64{}
	for _, row := range x.Top {
		p[row.Piece] = [2]float64{row.Before, row.After}
	}
	happy, sad := strconv.Quote(" happy"), strconv.Quote(" sad") // pieces are shown quoted
	if x.NewTop != happy || !(p[sad][1] < p[sad][0]) || x.KL > 0.5 {
		t.Errorf("%s on %q: new top %s, p(sad) %v, KL %.3f; want ' happy' on top, ' sad' less likely, KL under 0.5", views.SteerExample, r.Prompt, x.NewTop, p[sad], x.KL)
	}
	t.Logf("%s: %q %.3f → %.3f, new top %q, KL %.3f", views.SteerExample, x.Token, x.WasP, x.NowP, x.NewTop, x.KL)
}

// A head the run's interventions change says so above its pattern, in
// words (the pattern is computed as usual; its output is what changes),
// and in the head grid; the Explorer carries the run's interventions for
// the settings form.
func TestSwitchedOffHeadSaysSo(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	for _, tt := range []struct {
		ablate, meanOver string
		note, thumb      string // head 1's
	}{
		{"L2H1", "", "Head 1 is switched off in this run: its output is zero, so the pattern below, still computed, adds nothing to the residual stream.", "head 1 (off)"},
		{"L2H1*0.5", "", "Head 1 is scaled by 0.5 in this run: its output is multiplied by 0.5; the pattern below is computed as usual.", "head 1 (scaled ×0.5)"},
		{"L2H1", "Once upon a time, a girl sat in the park.", "Head 1 is replaced by its mean over the reference text in this run: its output is that average, not what the pattern below computes.", "head 1 (mean)"},
		{"L2attn", "", "Layer 2's attention, every head, is switched off in this run: its output is zero, so the pattern below, still computed, adds nothing to the residual stream.", "head 1"},
		{"L2H2", "", "", "head 1"},
		{"L1H1", "", "", "head 1"},
	} {
		t.Run(tt.ablate+" "+tt.meanOver, func(t *testing.T) {
			r := run("The capital of France is")
			r.Sampler.Temperature = 0
			if err := r.SetInterventions(tt.ablate, "", tt.meanOver); err != nil {
				t.Fatal(err)
			}
			se := session.New("off", "", reg)
			defer se.Close()
			if err := se.Run(ctx, r); err != nil {
				t.Fatal(err)
			}
			if err := se.Act(ctx, "goto", getter(map[string]string{"stage": "attention", "layer": "2"})); err != nil {
				t.Fatal(err)
			}
			e := Explorer(se)
			a, ok := e.Panel.(*views.AttentionPanel)
			if !ok || a.Head != 0 {
				t.Fatalf("attention panel: %+v", e.Panel)
			}
			if a.OffNote != tt.note {
				t.Errorf("note %q, want %q", a.OffNote, tt.note)
			}
			if got := a.HeadRows[0].Label; got != tt.thumb {
				t.Errorf("head 1's thumbnail %q, want %q", got, tt.thumb)
			}
			if e.Ablate != tt.ablate {
				t.Errorf("the Explorer carries the interventions %q, want %q", e.Ablate, tt.ablate)
			}
		})
	}
}

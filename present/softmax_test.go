package present

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"stepthrough/engine/sample"
	"stepthrough/models/modelstest"
	"stepthrough/session"
	"stepthrough/spec"
	"stepthrough/views"
)

// softmaxAt opens r at a token step's softmax stage and returns the panel
// and the sampler steps the run recorded there.
func softmaxAt(t *testing.T, se *session.Session, r spec.Run, step int) *views.SoftmaxPanel {
	t.Helper()
	r.View = spec.View{Token: step, StageName: "softmax", Layer: -1}
	if err := se.Open(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	sm, ok := Explorer(se).Panel.(*views.SoftmaxPanel)
	if !ok {
		t.Fatalf("step %d: the panel is %T, not the softmax panel", step, Explorer(se).Panel)
	}
	return sm
}

// sameKept checks the panel's kept set against what the run's chain kept
// at a token step: the count, and every listed bar in or out as the
// recorded survivors say.
func sameKept(t *testing.T, sm *views.SoftmaxPanel, se *session.Session, step int) {
	t.Helper()
	chain := snapOf(se).Cursor.Steps[step].Sampler
	last := chain[len(chain)-1]
	if sm.Kept != last.AfterCount {
		t.Errorf("the softmax panel keeps %d tokens, the run's chain %d", sm.Kept, last.AfterCount)
	}
	all := len(last.After) == last.AfterCount // else the trace recorded the likeliest only
	kept := map[int32]bool{}
	for _, c := range last.After {
		kept[c.ID] = true
	}
	for _, b := range sm.Top {
		if (all || kept[b.ID]) && b.Out == kept[b.ID] {
			t.Errorf("token %s: the panel has it out = %v, the chain kept = %v", b.Piece, b.Out, kept[b.ID])
		}
	}
}

// The softmax panel's kept set is the one the run's sampler chain keeps
// (llama.cpp's order and Hugging Face's), at the run's own temperature and
// top-p, and, with the sliders moved, at theirs: the same as a run made
// with the sliders' settings.
func TestSoftmaxPanelKeepsWhatTheChainKeeps(t *testing.T) {
	reg := modelstest.Lesson(t)
	se := session.New("sm", "", reg)
	defer se.Close()
	settings := []struct {
		name   string
		change func(*sample.Params)
	}{
		{"defaults", func(*sample.Params) {}},
		{"top-p only", func(p *sample.Params) { p.TopK, p.MinP = 0, 0 }},
		{"penalties", func(p *sample.Params) { p.RepeatPenalty, p.TopP = 1.5, 0.6 }},
	}
	for _, order := range []string{"llama.cpp", "transformers"} {
		for _, set := range settings {
			for _, temp := range []float64{0.3, 0.8, 1.5, 3, 100} {
				t.Run(fmt.Sprintf("%s/%s/T=%g", order, set.name, temp), func(t *testing.T) {
					r := run("She was very")
					r.Sampler.Seed, r.Sampler.SeedSet = 3, true
					o, err := sample.ParseOrder(order)
					if err != nil {
						t.Fatal(err)
					}
					r.Sampler.Order = o
					set.change(&r.Sampler)
					r.Sampler.Temperature = temp
					// the run's own settings, at a step after generated tokens
					sameKept(t, softmaxAt(t, se, r, 2), se, 2)
					if temp > 3 {
						return // beyond the slider's range
					}
					// the sliders moved to temp and 0.7 on a run at T = 0.8
					// (the prompt's step: its logits do not depend on the
					// sampler) keep what a run at those settings keeps
					want := r
					want.Sampler.TopP = 0.7
					sameKeptAsRun := softmaxAt(t, se, want, 0)
					sameKept(t, sameKeptAsRun, se, 0)
					slid := r
					slid.Sampler.Temperature = 0.8
					softmaxAt(t, se, slid, 0)
					for _, a := range []struct{ action, field, value string }{
						{session.ActionWhatIfTemperature, "view_temperature", fmt.Sprint(temp)},
						{session.ActionWhatIfTopP, "view_top_p", "0.7"},
					} {
						if err := se.Act(context.Background(), a.action, getter(map[string]string{a.field: a.value})); err != nil {
							t.Fatal(err)
						}
					}
					sm := Explorer(se).Panel.(*views.SoftmaxPanel)
					if sm.Kept != sameKeptAsRun.Kept {
						t.Errorf("sliders at T = %g, top-p 0.7 keep %d tokens; a run at those settings keeps %d", temp, sm.Kept, sameKeptAsRun.Kept)
					}
					for i, b := range sm.Top {
						if w := sameKeptAsRun.Top[i]; b.ID != w.ID || b.Out != w.Out {
							t.Errorf("bar %d: slid %s out = %v, the run's %s out = %v", i, b.Piece, b.Out, w.Piece, w.Out)
						}
					}
				})
			}
		}
	}
}

// The softmax panel's cut line can be checked by hand against a column
// beside it: top-p reads the probabilities after the steps before it (in
// llama.cpp's order, top-k's survivors renormalised at T = 1), so the
// panel shows their running sum, and the last kept row is the first whose
// sum reaches p. (The bars' own cumulative column, at the slider's T over
// the whole vocabulary, reached 95 % two rows before the cut.)
func TestSoftmaxCutCheckedByHand(t *testing.T) {
	reg := modelstest.Lesson(t)
	se := session.New("sm", "", reg)
	defer se.Close()
	for _, c := range []struct {
		name  string
		order string
		want  string // in TopPReads
	}{
		{"llama.cpp", "llama.cpp", "after top-k (40 tokens left), renormalised, at T = 1"},
		{"transformers", "transformers", "at T = 0.7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run("She was very")
			o, err := sample.ParseOrder(c.order)
			if err != nil {
				t.Fatal(err)
			}
			r.Sampler.Order, r.Sampler.Temperature, r.Sampler.TopK, r.Sampler.TopP, r.Sampler.MinP = o, 0.7, 40, 0.95, 0
			sm := softmaxAt(t, se, r, 0)
			if !strings.Contains(sm.TopPReads, c.want) {
				t.Errorf("top-p reads %q, want it to say %q", sm.TopPReads, c.want)
			}
			if !sm.Prefix || sm.Kept > len(sm.Top) {
				t.Fatalf("the cut (%d kept) is not on the panel's %d rows", sm.Kept, len(sm.Top))
			}
			if sm.CutBy != "top-p" {
				t.Errorf("the cut line is top-p's, the panel says %q (%s)", sm.CutBy, sm.CutNote)
			}
			last := sm.Top[sm.Kept-1]
			if last.TopPCum < sm.TopP || sm.Kept > 1 && sm.Top[sm.Kept-2].TopPCum >= sm.TopP {
				t.Errorf("the cut after row %d: top-p's running sum there is %.4f, the row above %.4f; want the first to reach %g", sm.Kept, last.TopPCum, sm.Top[max(0, sm.Kept-2)].TopPCum, sm.TopP)
			}
			t.Logf("%s: %d kept; top-p reads %s; its sum at the cut %.4f, the bars' cumulative there %.4f", c.name, sm.Kept, sm.TopPReads, last.TopPCum, last.Cum)
		})
	}
}

// The cut line names the step that made the last cut: at T = 0 after
// top-p (llama.cpp's order), temperature keeps the likeliest alone, so the
// line says so instead of explaining top-p's sum, which stopped further
// down.
func TestSoftmaxCutNamesItsStep(t *testing.T) {
	reg := modelstest.Lesson(t)
	se := session.New("sm", "", reg)
	defer se.Close()
	r := run("She was very")
	r.Sampler.Temperature, r.Sampler.TopK, r.Sampler.TopP, r.Sampler.MinP = 0, 40, 0.95, 0
	sm := softmaxAt(t, se, r, 0)
	if sm.Kept != 1 || sm.CutBy != string(sample.Temperature) {
		t.Fatalf("at T = 0: %d kept, cut by %q", sm.Kept, sm.CutBy)
	}
	var tp views.MapFilter
	for _, f := range sm.Funnel {
		if f.Name == string(sample.TopP) {
			tp = f
		}
	}
	want := fmt.Sprintf("temperature (T = 0): %d → 1, greedy: the likeliest token alone is kept", tp.Out)
	if tp.Out <= 1 || sm.CutNote != want {
		t.Errorf("cut note %q, want %q (top-p kept %d)", sm.CutNote, want, tp.Out)
	}
}

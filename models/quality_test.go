package models_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"stepthrough/models/corpus"
	"stepthrough/models/recipe"
)

// The committed lesson model meets every quality bar of models/README.md,
// measured with the engine on the held-out split (greedy decoding): a
// retrain that misses one fails here. STEPTHROUGH_MODELS_DIR points the
// test at another run's output (train-lesson --out DIR), e.g. to see it
// fail on an undertrained model.
func TestQualityBars(t *testing.T) {
	dir := modelsDir()
	rep, err := recipe.ReadReport(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	held := heldOut(rep.Seed, rep.Scale)
	bars, err := recipe.Measure(context.Background(), filepath.Join(dir, "lesson.gguf"), held, recipe.ReportSizes, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("capitals %s, held-out phrasings %s; copying %s (first token %s); calls %s, answers %s; direct %s, thinking %s; turns ended %s",
		bars.CapitalTrain, bars.CapitalHeld, bars.Copy, bars.CopyFirst, bars.ToolCall, bars.ToolAnswer, bars.Direct, bars.Think, bars.ChatEnd)
	for _, f := range bars.Failures() {
		t.Error(f)
	}
	if !sameRates(bars, rep.Bars) {
		t.Errorf("report.json is stale: it says %+v, the model measures %+v (rerun train-lesson --eval-only)", rep.Bars, bars)
	}
}

func sameRates(a, b recipe.Bars) bool {
	pairs := [][2]recipe.Rate{{a.CapitalTrain, b.CapitalTrain}, {a.CapitalHeld, b.CapitalHeld}, {a.Copy, b.Copy}, {a.CopyFirst, b.CopyFirst},
		{a.ToolCall, b.ToolCall}, {a.ToolAnswer, b.ToolAnswer}, {a.Direct, b.Direct}, {a.Think, b.Think}, {a.ChatEnd, b.ChatEnd}}
	for _, p := range pairs {
		if p[0].Hits != p[1].Hits || p[0].Cases != p[1].Cases {
			return false
		}
	}
	return true
}

// The quantization table of models/README.md holds: three of its rows
// measured again (the 8-bit and the 4-bit preset, and Q4_0, whose rows
// multiply activations rounded to Q8_0 as llama.cpp's do) agree with
// report.json, and fewer bits cost more KL.
func TestQuantizationTable(t *testing.T) {
	dir := modelsDir()
	rep, err := recipe.ReadReport(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	stated := map[string]recipe.QuantRow{}
	for _, r := range rep.Quantization {
		stated[r.Type] = r
	}
	if len(stated) < 13 {
		t.Fatalf("report.json has %d quantization rows (rerun train-lesson --eval-only)", len(stated))
	}
	held := heldOut(rep.Seed, rep.Scale)
	rows, err := recipe.MeasureQuantization(context.Background(), filepath.Join(dir, "lesson.gguf"), recipe.QuantText(held), []string{"Q8_0", "Q4_K_M", "Q4_0"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range rows {
		want := stated[got.Type]
		if got.Bytes != want.Bytes || math.Abs(got.PPL-want.PPL) > 1e-3*want.PPL || math.Abs(got.MeanKL-want.MeanKL) > 0.02*want.MeanKL+1e-9 ||
			math.Abs(got.SameTop-want.SameTop) > 0.002 {
			t.Errorf("%s: measures %+v, report.json says %+v (rerun train-lesson --eval-only)", got.Type, got, want)
		}
	}
	if !(stated["Q8_0"].MeanKL < stated["Q6_K"].MeanKL && stated["Q6_K"].MeanKL < stated["Q5_K_M"].MeanKL && stated["Q5_K_M"].MeanKL < stated["Q4_K_M"].MeanKL) {
		t.Errorf("KL does not grow as bits shrink: Q8_0 %g, Q6_K %g, Q5_K_M %g, Q4_K_M %g", stated["Q8_0"].MeanKL, stated["Q6_K"].MeanKL, stated["Q5_K_M"].MeanKL, stated["Q4_K_M"].MeanKL)
	}
}

// The committed qwen3-family model (lesson-qwen3.gguf) measures what
// family-report.json says, on the same held-out split and sizes as the
// main model, and it answers the question the Families lesson asks both
// families: a retrain or an engine change that moves either fails here.
func TestFamilyModel(t *testing.T) {
	dir := modelsDir()
	rep, err := recipe.ReadFamilyReport(filepath.Join(dir, "family-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, recipe.FamilyFile)
	held := heldOut(rep.Seed, rep.Scale)
	bars, err := recipe.Measure(context.Background(), path, held, recipe.ReportSizes, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, top, greedy, err := recipe.MeasureParis(context.Background(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("qwen3: p(\" Paris\") %.3f (top %q); capitals %s, held-out phrasings %s; copying %s", p, top, bars.CapitalTrain, bars.CapitalHeld, bars.Copy)
	if !sameRates(bars, rep.Bars) || math.Abs(p-rep.ParisP) > 1e-4 || greedy != rep.ParisGreedy {
		t.Errorf("family-report.json is stale: it says %+v and p(Paris) %g, the model measures %+v and %g (rerun train-lesson --family --eval-only)", rep.Bars, rep.ParisP, bars, p)
	}
	if !greedy || bars.CapitalTrain.Value() < familyCapitals || bars.Copy.Value() < familyCopy {
		t.Errorf("the qwen3 model no longer answers as the Families lesson says: greedy Paris %v, capitals %s (want ≥ %.0f%%), copying %s (want ≥ %.0f%%)",
			greedy, bars.CapitalTrain, 100*familyCapitals, bars.Copy, 100*familyCopy)
	}
}

// The family model's bars: the main model's capital and copying bars,
// which the Families lesson relies on (models/README.md).
const (
	familyCapitals = 0.95
	familyCopy     = 0.90
)

// The committed copying model (lesson-v3.gguf) measures what
// copying-report.json says on its held-out split, holds every bar (the
// v3 bars and lesson.gguf's) but those copyingShort lists, and its induction heads
// do what models/README.md says: with all of them zeroed the
// repeat of a random sequence is gone; with only the copier zeroed,
// held-out names are rarely copied and repeats fall by more than a
// tenth (the other head copies most of a random sequence on its own),
// while most capitals are still recalled. The hand-written forms
// are copied at least as often as models/README.md says, and next to
// never with the induction heads zeroed.
func TestCopyingModel(t *testing.T) {
	dir := modelsDir()
	rep, err := recipe.ReadCopyingReport(filepath.Join(dir, "copying-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	held := recipe.CopyingHeldOut(rep.Seed, rep.Scale)
	c, err := recipe.MeasureCopying(context.Background(), filepath.Join(dir, recipe.CopyingFile), held, recipe.ReportSizes, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := rep.Copying
	cz := c.CopierZeroed()
	t.Logf("induction heads %v, copier %s; repeats %s, names %s; zeroed: repeats %s, capitals %s; %s zeroed: repeats %s, names %s, capitals %s",
		c.Induction, c.Copier, c.Repeats, c.NamesHeld, c.Zeroed.Repeats, c.Zeroed.CapitalTrain, c.Copier, cz.Repeats, cz.NamesHeld, cz.CapitalTrain)
	if diff := cmp.Diff(want, c, cmpopts.IgnoreFields(recipe.Rate{}, "Misses"), cmpopts.EquateApprox(0, 1e-4)); diff != "" {
		t.Errorf("copying-report.json is stale (rerun train-lesson --copying --eval-only) (-report +measured):\n%s", diff)
	}
	baseHeld := heldOut(rep.Seed, rep.Scale)
	bars, err := recipe.Measure(context.Background(), filepath.Join(dir, recipe.CopyingFile), baseHeld, recipe.ReportSizes, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !sameRates(bars, rep.Bars) {
		t.Errorf("copying-report.json is stale: it says %+v, the model measures %+v (rerun train-lesson --copying --eval-only)", rep.Bars, bars)
	}
	rep.Copying, rep.Bars = c, bars
	short := map[string]bool{}
	for _, f := range rep.Failures() {
		name, _, _ := strings.Cut(f, ":")
		short[name] = true
		if !slices.Contains(copyingShort, name) {
			t.Errorf("lesson-v3.gguf misses a bar: %s", f)
		}
	}
	for _, name := range copyingShort {
		if !short[name] {
			t.Errorf("lesson-v3.gguf now holds the bar %q: take it off copyingShort and models/README.md's list", name)
		}
	}
	var byPattern recipe.Rate
	for _, r := range c.ByPattern {
		byPattern.Cases += r.Cases
		byPattern.Hits += r.Hits
	}
	if byPattern.Cases != c.NamesHeld.Cases || byPattern.Hits != c.NamesHeld.Hits {
		t.Errorf("the held-out patterns' rates add up to %s, not the held-out names' %s", byPattern, c.NamesHeld)
	}
	if c.Zeroed.Repeats.Value() > maxRepeatsZeroed || c.Zeroed.NamesHeld.Value() > maxNamesZeroed {
		t.Errorf("with the induction heads %v zeroed, copying goes on: random repeats %s (want ≤ %.0f%%), held-out names %s (want ≤ %.0f%%)", c.Induction, c.Zeroed.Repeats, 100*maxRepeatsZeroed, c.Zeroed.NamesHeld, 100*maxNamesZeroed)
	}
	if c.Zeroed.CapitalTrain.Value() < minCapitalsZeroed || c.Zeroed.ParisP < minParisZeroed {
		t.Errorf("with the induction heads %v zeroed, recall fails: capitals %s (want ≥ %.0f%%), p(\" Paris\") %.3f (want ≥ %.2f)", c.Induction, c.Zeroed.CapitalTrain, 100*minCapitalsZeroed, c.Zeroed.ParisP, minParisZeroed)
	}
	if c.Intact.Handwritten.Value() < minHandwritten || c.Zeroed.Handwritten.Value() > maxHandwrittenZeroed {
		t.Errorf("hand-written forms: %s intact (want ≥ %.0f%%), %s with the induction heads zeroed (want ≤ %.0f%%)",
			c.Intact.Handwritten, 100*minHandwritten, c.Zeroed.Handwritten, 100*maxHandwrittenZeroed)
	}
	for _, h := range c.Induction {
		if !strings.HasPrefix(h, lastLayer) {
			t.Errorf("induction head %s is not in the last layer (models/README.md says they are)", h)
		}
	}
	if c.Copier != copier {
		t.Errorf("the copier is %s, not %s, which the lesson \"The head that copies\" switches off", c.Copier, copier)
	}
	if cz.NamesHeld.Value() > maxNamesCopierZeroed || cz.Repeats.Value() > maxRepeatsCopierShare*c.Repeats.Value() || cz.CapitalTrain.Value() < minCapitalsCopierZeroed {
		t.Errorf("with %s zeroed: held-out names %s (want ≤ %.0f%%), repeats %s (want under %.0f%% of %s), capitals %s (want ≥ %.0f%%)",
			c.Copier, cz.NamesHeld, 100*maxNamesCopierZeroed, cz.Repeats, 100*maxRepeatsCopierShare, c.Repeats, cz.CapitalTrain, 100*minCapitalsCopierZeroed)
	}
}

// copyingShort are the bars lesson-v3.gguf is known to miss, as
// models/README.md says (issue #31): every other bar must hold.
var copyingShort = []string{}

// What the copying lesson relies on (models/README.md).
const (
	maxRepeatsZeroed     = 0.01
	maxNamesZeroed       = 0.05
	lastLayer            = "L4H"
	maxNamesCopierZeroed = 0.25
	// the other induction head copies most of a random sequence on its
	// own, so the copier alone costs names far more than repeats
	maxRepeatsCopierShare   = 0.90
	minCapitalsCopierZeroed = 0.80
	// recall with every induction head zeroed (issue #31: copying fails,
	// recall survives): most capitals, and p(" Paris") above minParisZeroed
	minCapitalsZeroed = 0.90
	minParisZeroed    = 0.95
	// the hand-written forms (models/recipe/handwritten.tsv): copied
	// intact, and not with the induction heads zeroed
	minHandwritten       = 0.70
	maxHandwrittenZeroed = 0.05
	// copier is the head the lesson "The head that copies" switches off.
	copier = "L4H1"
)

// heldOut is the default corpus's held-out split, which every model's
// lesson.gguf bars are measured on.
func heldOut(seed uint64, scale float64) []corpus.Doc {
	_, held := corpus.Split(corpus.Default(seed).Scaled(scale), 0.1)
	return held
}

// modelsDir is where the models under test are: this directory, or
// STEPTHROUGH_MODELS_DIR (another run's train-lesson --out).
func modelsDir() string {
	if dir := os.Getenv("STEPTHROUGH_MODELS_DIR"); dir != "" {
		return dir
	}
	return "."
}

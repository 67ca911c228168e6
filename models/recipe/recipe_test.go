package recipe

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/model"
	"stepthrough/engine/train"
)

// A miniature run of the whole recipe: files written, loadable, the report
// filled in, the README rendered, and the same seed giving the same bytes.
func TestRecipeMiniature(t *testing.T) {
	run := func(dir string) *Report {
		o := Defaults()
		o.OutDir, o.Scale, o.MainSteps, o.DraftSteps, o.Threads = dir, 0.01, 3, 2, 2
		o.Vocab, o.Eval = 600, EvalSizes{Copy: 10, Sums: 4, Chat: 4, Countries: 3, QuantBytes: 3000}
		rep, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	a, b := t.TempDir(), t.TempDir()
	rep := run(a)
	run(b)
	for _, f := range []string{"lesson.gguf", "lesson-draft.gguf"} {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s: not reproducible from the seed", f)
		}
		m, err := model.Load(filepath.Join(a, f))
		if err != nil {
			t.Fatal(err)
		}
		if m.Config.Arch != "gpt2" || m.Tokenizer.Vocab().Model != "gpt2" {
			t.Errorf("%s: %s with a %s tokenizer", f, m.Config.Arch, m.Tokenizer.Vocab().Model)
		}
		m.Close()
	}
	if rep.Bars.Copy.Cases == 0 || len(rep.Samples) != len(samplePrompts()) || rep.Main.ValLoss["facts"] == 0 || rep.Vocab > 600 ||
		len(rep.Quantization) != 13 || rep.Quantization[0].Type != "F32" {
		t.Errorf("report %+v", rep)
	}
	// an undertrained model misses the bars, and the check says so
	if f := rep.Bars.Failures(); len(f) < 5 {
		t.Errorf("a 3-step model passes bars: failures %q", f)
	}
	p := filepath.Join(a, "README.md")
	if err := WriteREADME(p, rep); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(p)
	if !strings.Contains(string(md), "Quality bars") || strings.Contains(string(md), "<no value>") {
		t.Errorf("README:\n%s", md)
	}
}

// Stopping and resuming from a checkpoint gives the same model as one run.
func TestRecipeResume(t *testing.T) {
	base := func(dir string, steps int, resume bool) {
		o := Defaults()
		o.OutDir, o.Scale, o.MainSteps, o.DraftSteps, o.Threads, o.Vocab = dir, 0.01, steps, 2, 2, 600
		o.CheckpointEvery, o.Resume, o.Eval = 2, resume, EvalSizes{Copy: 1, Sums: 1, Chat: 1, Countries: 1}
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	a, b := t.TempDir(), t.TempDir()
	base(a, 4, false)
	base(b, 3, false) // leaves a checkpoint at step 2
	base(b, 4, true)  // resumes from it
	x, _ := os.ReadFile(filepath.Join(a, "lesson.gguf"))
	y, _ := os.ReadFile(filepath.Join(b, "lesson.gguf"))
	if !bytes.Equal(x, y) {
		t.Error("resumed training differs from an uninterrupted run")
	}
}

// A miniature family run: the qwen3 model trains on the main model's
// corpus with the same tokenizer, loads in the engine as qwen3, and its
// report is written and measured.
func TestRecipeFamilyMiniature(t *testing.T) {
	dir := t.TempDir()
	o := Defaults()
	o.OutDir, o.Scale, o.MainSteps, o.DraftSteps, o.FamilySteps, o.Threads = dir, 0.01, 2, 1, 3, 2
	o.Vocab, o.Eval = 600, EvalSizes{Copy: 4, Sums: 2, Chat: 2, Countries: 2}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	rep, err := RunFamily(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	main, err := model.Load(filepath.Join(dir, "lesson.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer main.Close()
	fam, err := model.Load(filepath.Join(dir, FamilyFile))
	if err != nil {
		t.Fatal(err)
	}
	defer fam.Close()
	if fam.Config.Arch != "qwen3" || main.Config.Arch != "gpt2" {
		t.Errorf("architectures %s and %s, want gpt2 and qwen3", main.Config.Arch, fam.Config.Arch)
	}
	if diff := cmp.Diff(main.Tokenizer.Vocab().Tokens, fam.Tokenizer.Vocab().Tokens); diff != "" {
		t.Errorf("the two families' vocabularies differ (-gpt2 +qwen3):\n%s", diff)
	}
	read, err := ReadFamilyReport(filepath.Join(dir, "family-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if read.Arch != "qwen3" || read.Model.Steps != 3 || read.Bars.Copy.Cases == 0 || read.Model.Bytes == 0 || read.ParisP != rep.ParisP {
		t.Errorf("family report %+v", read)
	}
}

// A miniature run of the v3 recipe: the copying corpus, the tokenizer of
// the committed model, the report with every head scored and the bars
// measured intact and with the induction heads off; trained with the
// recall guard.
func TestCopyingMiniature(t *testing.T) {
	o := Defaults()
	o.OutDir, o.Scale, o.MainSteps, o.Threads, o.RecallGuard = t.TempDir(), 0.01, 3, 2, 0.3
	o.TokenizerFrom = filepath.Join("..", "lesson.gguf")
	o.Eval = EvalSizes{Copy: 5, Countries: 2}
	rep, err := RunCopying(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(filepath.Join(o.OutDir, CopyingFile))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	base, err := model.LoadVocab(o.TokenizerFrom)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(base.Tokenizer.Vocab().Tokens, m.Tokenizer.Vocab().Tokens); diff != "" {
		t.Errorf("the v3 model's vocabulary is not the committed model's (-committed +v3):\n%s", diff)
	}
	c := rep.Copying
	if len(c.Heads) != 4*6 || c.Intact.NamesHeld.Cases != 5 || c.Intact.Repeats.Cases == 0 || c.Passages.Cases == 0 || c.Zeroed.CapitalTrain.Cases == 0 || len(c.Alone) != len(c.Induction) || (c.Copier == "") != (len(c.Induction) == 0) {
		t.Errorf("copying bars %+v", c)
	}
	if len(c.Induction) > 0 && c.CopierZeroed().CapitalTrain.Cases != c.Zeroed.CapitalTrain.Cases {
		t.Errorf("the copier %s zeroed was measured on %d capitals, the induction heads zeroed on %d", c.Copier, c.CopierZeroed().CapitalTrain.Cases, c.Zeroed.CapitalTrain.Cases)
	}
	if !strings.Contains(rep.Command, "--recall-guard 0.3") {
		t.Errorf("command %q does not name the recall guard", rep.Command)
	}
	if _, err := os.Stat(filepath.Join(o.OutDir, "copying-report.json")); err != nil {
		t.Error(err)
	}
	if rep.Base == nil || rep.Base.Intact.Repeats.Cases == 0 {
		t.Errorf("the committed model's v3 bars are not measured: %+v", rep.Base)
	}
	main, err := ReadReport(filepath.Join("..", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	main.Copying = rep
	p := filepath.Join(o.OutDir, "README.md")
	if err := WriteREADME(p, main); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(p)
	if !strings.Contains(string(md), "## The copying model: lesson-v3.gguf") || strings.Contains(string(md), "<no value>") {
		t.Errorf("README without the v3 section, or with a missing value:\n%s", md)
	}
}

// randomRepeats: each document a BOS, then one random sequence of 8 to 64
// ordinary tokens two or three times.
func TestRandomRepeats(t *testing.T) {
	vf, err := model.LoadVocab(filepath.Join("..", "lesson.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	tk := vf.Tokenizer
	bos := tk.EncodeIDs("", true)[0]
	out := randomRepeats(tk, 5000, 1)
	if len(out) < 5000 || out[0] != bos {
		t.Fatalf("%d tokens, first %d", len(out), out[0])
	}
	docs := 0
	for start := 0; start < len(out); {
		end := start + 1
		for end < len(out) && out[end] != bos {
			end++
		}
		body := out[start+1 : end]
		ok := false
		for _, reps := range []int{2, 3} {
			if n := len(body) / reps; len(body)%reps == 0 && n >= 8 && n <= 64 {
				same := true
				for i := n; i < len(body); i++ {
					same = same && body[i] == body[i-n]
				}
				ok = ok || same
			}
		}
		if !ok {
			t.Fatalf("document %d is not a repeated sequence: %v", docs, body)
		}
		docs++
		start = end
	}
	if again := randomRepeats(tk, 5000, 1); !cmp.Equal(again, out) {
		t.Error("not deterministic")
	}
}

// --init takes the committed model's weights into the main shape, and
// refuses them for another shape in one error naming a tensor.
func TestInitFromCommittedModel(t *testing.T) {
	o := Defaults()
	vf, err := model.LoadVocab(filepath.Join("..", "lesson.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	c := o.Main
	c.Vocab = len(vf.Tokenizer.Vocab().Tokens)
	if err := initFrom(train.NewModel(c, 1, 1), filepath.Join("..", "lesson.gguf")); err != nil {
		t.Errorf("the main shape: %v", err)
	}
	d := o.Draft
	d.Vocab = c.Vocab
	if err := initFrom(train.NewModel(d, 1, 1), filepath.Join("..", "lesson.gguf")); err == nil || !strings.Contains(err.Error(), "tensor ") {
		t.Errorf("the draft's shape: %v, want a tensor named", err)
	}
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"stepthrough/models/recipe"
)

// runTrainLesson runs models/recipe: corpus, tokenizer, both models,
// quality bars, report.
func runTrainLesson(ctx context.Context, env Env, args []string) error {
	o := recipe.Defaults()
	fs := newFlags(env, "train-lesson", "[--out DIR] [--seed N] [--steps N] [--draft-steps N] [--scale F] [-t N] [--resume] [--eval-only | --readme-only | --family [--family-steps N]]")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the whole recipe")
	fs.StringVar(&o.OutDir, "out", o.OutDir, "output `directory`")
	fs.IntVar(&o.MainSteps, "steps", o.MainSteps, "training steps of the main model")
	fs.IntVar(&o.DraftSteps, "draft-steps", o.DraftSteps, "training steps of the draft model")
	fs.Float64Var(&o.Scale, "scale", o.Scale, "corpus size factor")
	fs.IntVar(&o.Threads, "t", 0, "CPU threads (0: one per core)")
	fs.BoolVar(&o.Resume, "resume", false, "continue from the checkpoints in --out/checkpoints (written every 500 steps) instead of starting over")
	fs.IntVar(&o.FamilySteps, "family-steps", o.FamilySteps, "training steps of the qwen3 family model (with --family)")
	family := fs.Bool("family", false, "only train the qwen3-family model on the same corpus and tokenizer (lesson-qwen3.gguf, family-report.json)")
	copying := fs.Bool("copying", false, "only train the lesson model v3 on the copying corpus (names introduced in more ways, repeated lists and random token sequences) with --tokenizer's tokenizer (lesson-v3.gguf, copying-report.json in --out; with --eval-only, only measure it again)")
	fs.Float64Var(&o.Repeats, "repeats", o.Repeats, "with --copying: repeated random token sequences added to the stream, as a share of its text's tokens")
	fs.Float64Var(&o.RecallGuard, "recall-guard", 0, "with --copying: the weight of an extra loss on the capitals' answers with the last layer's induction heads switched off (scored every 100 steps; before any forms, all of the layer's heads or each with chance 1/2), so that recall does not need the heads that copy")
	fs.StringVar(&o.TokenizerFrom, "tokenizer", "", "with --copying: the model `file` whose tokenizer to use (default models/lesson.gguf)")
	fs.StringVar(&o.InitFrom, "init", "", "with --copying: start from this F32 model `file`'s weights (of the main model's shape, e.g. models/lesson.gguf) instead of random ones; the learning rate then peaks at 1e-3")
	readmeOnly := fs.Bool("readme-only", false, "only render README.md from the report.json of the last run")
	evalOnly := fs.Bool("eval-only", false, "only measure the quality bars again on the models in --out (rewrites report.json, or with --family family-report.json, and README.md)")
	if err := parse(fs, args); err != nil {
		return err
	}
	o.Progress = env.Stderr
	// --readme-only renders every report in --out, whichever model
	// --family or --copying name: it never trains
	if *family && !*readmeOnly {
		return trainFamily(ctx, env, o, *evalOnly)
	}
	if *copying && !*readmeOnly {
		return trainCopying(ctx, env, o, *evalOnly)
	}
	var rep *recipe.Report
	var err error
	switch {
	case *readmeOnly:
		rep, err = recipe.ReadReport(filepath.Join(o.OutDir, "report.json"))
	case *evalOnly:
		rep, err = recipe.Reevaluate(ctx, o.OutDir, o.Threads)
	default:
		rep, err = recipe.Run(ctx, o)
	}
	if err == nil {
		err = writeREADME(o.OutDir, rep)
	}
	if err != nil {
		return err
	}
	b := rep.Bars
	fmt.Fprintf(env.Stdout, "capitals %s, held-out phrasings %s; copying %s; calculator calls %s, answers %s; direct %s, thinking %s; turns ended %s; draft agreement %.1f%%\n",
		b.CapitalTrain, b.CapitalHeld, b.Copy, b.ToolCall, b.ToolAnswer, b.Direct, b.Think, b.ChatEnd, 100*rep.DraftAgreement)
	for _, f := range b.Failures() {
		fmt.Fprintf(env.Stdout, "bar missed: %s\n", f)
	}
	return nil
}

// trainFamily runs recipe.RunFamily and prints what it measured.
func trainFamily(ctx context.Context, env Env, o recipe.Options, evalOnly bool) error {
	run := recipe.RunFamily
	if evalOnly {
		run = func(ctx context.Context, o recipe.Options) (*recipe.FamilyReport, error) {
			return recipe.ReevaluateFamily(ctx, o.OutDir, o.Threads)
		}
	}
	// read first: a run of half an hour should not end on a missing file
	main, err := recipe.ReadReport(filepath.Join(o.OutDir, "report.json"))
	if err != nil {
		return fmt.Errorf("the README is rendered with the main models' report (train-lesson --out %s first): %w", o.OutDir, err)
	}
	rep, err := run(ctx, o)
	if err != nil {
		return err
	}
	if err := writeREADME(o.OutDir, main); err != nil {
		return err
	}
	b := rep.Bars
	fmt.Fprintf(env.Stdout, "%s: p(\" Paris\") %.3f (greedy %v); capitals %s, held-out phrasings %s; copying %s; calculator calls %s; turns ended %s\n",
		rep.Arch, rep.ParisP, rep.ParisGreedy, b.CapitalTrain, b.CapitalHeld, b.Copy, b.ToolCall, b.ChatEnd)
	return nil
}

// writeREADME renders dir/README.md from the main report and, when the
// directory has one, the family report.
func writeREADME(dir string, rep *recipe.Report) error {
	var err error
	if rep.Family, err = optional(recipe.ReadFamilyReport(filepath.Join(dir, "family-report.json"))); err != nil {
		return err
	}
	if rep.Copying, err = optional(recipe.ReadCopyingReport(filepath.Join(dir, "copying-report.json"))); err != nil {
		return err
	}
	return recipe.WriteREADME(filepath.Join(dir, "README.md"), rep)
}

// optional is a report that may be absent: nil then, and no error.
func optional[T any](r *T, err error) (*T, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return r, err
}

func trainCopying(ctx context.Context, env Env, o recipe.Options, evalOnly bool) error {
	if !(o.RecallGuard >= 0 && o.RecallGuard <= 10) {
		return usageError{fmt.Errorf("--recall-guard: %g is not a weight from 0 to 10", o.RecallGuard)}
	}
	if !(o.Repeats >= 0 && o.Repeats <= 10) {
		return usageError{fmt.Errorf("--repeats: %g is not a share from 0 to 10 of the text's tokens", o.Repeats)}
	}
	if o.TokenizerFrom == "" {
		o.TokenizerFrom = filepath.Join("models", "lesson.gguf")
	}
	if o.InitFrom != "" {
		if _, err := os.Stat(o.InitFrom); err != nil {
			return usageError{fmt.Errorf("--init: %w", err)}
		}
	}
	var rep *recipe.CopyingReport
	var err error
	if evalOnly {
		rep, err = recipe.ReevaluateCopying(ctx, o.OutDir, o)
	} else {
		rep, err = recipe.RunCopying(ctx, o)
	}
	if err != nil {
		return err
	}
	if main, err := recipe.ReadReport(filepath.Join(o.OutDir, "report.json")); err == nil {
		if err := writeREADME(o.OutDir, main); err != nil {
			return err
		}
	}
	b, c := rep.Bars, rep.Copying
	fmt.Fprintf(env.Stdout, "capitals %s, held-out phrasings %s; copying %s; calculator calls %s, answers %s; thinking %s; turns ended %s\n",
		b.CapitalTrain, b.CapitalHeld, b.Copy, b.ToolCall, b.ToolAnswer, b.Think, b.ChatEnd)
	fmt.Fprintf(env.Stdout, "held-out patterns: names %s (at the start %s, beginning with a vowel %s); random repeats %s; induction heads %v\n", c.NamesHeld, c.NamesStart, c.NamesVowel, c.Repeats, c.Induction)
	for _, a := range []struct {
		name string
		a    recipe.Ablation
	}{{"intact", c.Intact}, {"induction heads zeroed", c.Zeroed}, {"induction heads mean-ablated", c.MeanAblated}} {
		printAblation(env, a.name, a.a)
	}
	for _, h := range c.Alone {
		printAblation(env, h.Head+" alone zeroed", h.Ablation)
	}
	fmt.Fprintf(env.Stdout, "copier: %s\n", c.Copier)
	return nil
}

// printAblation writes one line of copying and recall under an ablation.
func printAblation(env Env, name string, a recipe.Ablation) {
	fmt.Fprintf(env.Stdout, "%s: repeats %s, passages %s, names %s, capitals %s, p(Paris) %.3f\n", name, a.Repeats, a.Passages, a.NamesHeld, a.CapitalTrain, a.ParisP)
}

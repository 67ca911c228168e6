package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"stepthrough/models/recipe"
)

// runTrainLesson runs models/recipe: corpus, tokenizer, both models,
// quality bars, report.
func runTrainLesson(ctx context.Context, env Env, args []string) error {
	o := recipe.Defaults()
	fs := newFlags(env, "train-lesson", "[--out DIR] [--seed N] [--steps N] [--draft-steps N] [--scale F] [-t N] [--resume] [--eval-only | --readme-only]")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the whole recipe")
	fs.StringVar(&o.OutDir, "out", o.OutDir, "output `directory`")
	fs.IntVar(&o.MainSteps, "steps", o.MainSteps, "training steps of the main model")
	fs.IntVar(&o.DraftSteps, "draft-steps", o.DraftSteps, "training steps of the draft model")
	fs.Float64Var(&o.Scale, "scale", o.Scale, "corpus size factor")
	fs.IntVar(&o.Threads, "t", 0, "CPU threads (0: one per core)")
	fs.BoolVar(&o.Resume, "resume", false, "continue from the checkpoints in --out/checkpoints (written every 500 steps) instead of starting over")
	readmeOnly := fs.Bool("readme-only", false, "only render README.md from the report.json of the last run")
	evalOnly := fs.Bool("eval-only", false, "only measure the quality bars again on the models in --out (rewrites report.json and README.md)")
	if err := parse(fs, args); err != nil {
		return err
	}
	o.Progress = env.Stderr
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
		err = recipe.WriteREADME(filepath.Join(o.OutDir, "README.md"), rep)
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

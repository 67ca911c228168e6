// Command stepthrough runs a real language model one stage at a time.
//
//	stepthrough <command> [flags]
//
// Commands: tokenize, logits, generate, bench, inspect, synth. Run
// "stepthrough <command> -h" for a command's flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"stepthrough/engine/cli"
	"stepthrough/models"
	"stepthrough/models/recipe"
	"stepthrough/server"
	"stepthrough/static"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := cli.Env{Stdout: os.Stdout, Stderr: os.Stderr}
	if len(os.Args) < 2 || os.Args[1] == "serve" {
		args := []string{}
		if len(os.Args) > 2 {
			args = os.Args[2:]
		}
		os.Exit(serve(ctx, args))
	}
	if os.Args[1] == "train-lesson" {
		os.Exit(trainLesson(ctx, os.Args[2:]))
	}
	if os.Args[1] == "loadtest" {
		os.Exit(loadtest(ctx, os.Args[2:]))
	}
	if os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		fmt.Fprintf(os.Stdout, "usage: stepthrough [command] [flags]\n\ncommands:\n  serve     run the web app (the default)\n  train-lesson  make the lesson models from scratch (corpus, tokenizer, training)\n  loadtest  a classroom of WebSocket students against a running server: broadcast latency\n%s", cli.Usage())
		return
	}
	os.Exit(cli.Run(ctx, env, os.Args[1], os.Args[2:]))
}

// serve runs the web app until interrupted.
func serve(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	dirs := fs.String("models-dir", "", "more directories of .gguf models (comma-separated)")
	data := fs.String("data-dir", "data", "where classrooms are stored (rooms.db, SQLite)")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(os.Stderr, "stepthrough serve: %v\n", err)
		return 2
	}
	modelDirs := []string{"models"}
	if *dirs != "" {
		modelDirs = append(modelDirs, strings.Split(*dirs, ",")...)
	} else if ref := filepath.Join("..", "shared", "reference", "models"); dirExists(ref) {
		modelDirs = append(modelDirs, ref) // the reference model beside the checkout is offered too
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if msg := static.Missing(); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
	}
	s, err := server.New(server.Config{Addr: *addr, ModelsDirs: modelDirs, Logger: log, DataDir: *data,
		Embedded: map[string][]byte{"lesson.gguf": models.Lesson, "lesson-draft.gguf": models.LessonDraft}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "stepthrough serve: %v\n", err)
		return 1
	}
	if len(s.Models()) == 0 {
		fmt.Fprintf(os.Stderr, "no models found in %s: add a .gguf or pass --models-dir\n", strings.Join(modelDirs, ", "))
	}
	err = s.Run(ctx, func(a string) { fmt.Printf("Stepthrough is serving on http://%s\n", a) })
	if err != nil {
		fmt.Fprintf(os.Stderr, "stepthrough serve: %v\n", err)
		return 1
	}
	return 0
}

// loadtest runs server.LoadTest against a running server.
func loadtest(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	url := fs.String("url", "http://127.0.0.1:8080", "the server to test")
	students := fs.Int("students", 200, "WebSocket students in the room")
	steps := fs.Int("steps", 100, "instructor steps (one every 100 ms at most)")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(os.Stderr, "stepthrough loadtest: %v\n", err)
		return 2
	}
	if *students < 1 || *students > 5000 || *steps < 1 || *steps > 100000 {
		fmt.Fprintln(os.Stderr, "stepthrough loadtest: --students must be 1..5000 and --steps 1..100000")
		return 2
	}
	r, err := server.LoadTest(ctx, strings.TrimRight(*url, "/"), *students, *steps)
	if err != nil {
		fmt.Fprintf(os.Stderr, "stepthrough loadtest: %v\n", err)
		return 1
	}
	fmt.Println(r)
	return 0
}

func dirExists(d string) bool {
	st, err := os.Stat(d)
	return err == nil && st.IsDir()
}

// trainLesson runs models/recipe: corpus, tokenizer, both models, report.
func trainLesson(ctx context.Context, args []string) int {
	o := recipe.Defaults()
	fs := flag.NewFlagSet("train-lesson", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the whole recipe")
	fs.StringVar(&o.OutDir, "out", o.OutDir, "output directory")
	fs.IntVar(&o.MainSteps, "steps", o.MainSteps, "training steps of the main model")
	fs.IntVar(&o.DraftSteps, "draft-steps", o.DraftSteps, "training steps of the draft model")
	fs.Float64Var(&o.Scale, "scale", o.Scale, "corpus size factor")
	fs.IntVar(&o.Threads, "t", 0, "CPU threads (0: all cores)")
	readmeOnly := fs.Bool("readme-only", false, "only render README.md from the report.json of the last run")
	evalOnly := fs.Bool("eval-only", false, "only measure the quality bars again on the models in --out (updates report.json and README.md)")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(os.Stderr, "stepthrough train-lesson: %v\n", err)
		return 2
	}
	o.Progress = os.Stderr
	var rep *recipe.Report
	var err error
	switch {
	case *readmeOnly:
		rep, err = recipe.ReadReport(filepath.Join(o.OutDir, "report.json"))
	case *evalOnly:
		rep, err = recipe.Reevaluate(ctx, o.OutDir)
	default:
		rep, err = recipe.Run(ctx, o)
	}
	if err == nil {
		err = recipe.WriteREADME(filepath.Join(o.OutDir, "README.md"), rep)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "stepthrough train-lesson: %v\n", err)
		return 1
	}
	fmt.Printf("Paris: top %q, p %.3f; capitals top-1 %.1f%%; copying top-1 %.1f%% of %d; draft agreement %.1f%%\n",
		rep.ParisTop, rep.ParisP, 100*rep.CapitalTop1, 100*rep.CopyTop1, rep.CopyCases, 100*rep.DraftAgreement)
	return 0
}

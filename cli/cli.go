// Package cli is the stepthrough command tree: every command (serve,
// tokenize, logits, generate, bench, loadgen, inspect, pull, compare, synth,
// loadtest, train-lesson) in one place with one flag style, a stable contract that
// users and tests script against. "stepthrough <command> -h" lists every
// flag of a command. Output goes to stdout; an error is one line on stderr
// and a non-zero exit status (2 for usage errors).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Env is where a command reads and writes.
type Env struct {
	Stdout, Stderr io.Writer
}

type command struct {
	summary string
	run     func(ctx context.Context, env Env, args []string) error
}

var commands = map[string]command{
	"serve":        {"run the web app (the default command)", runServe},
	"loadtest":     {"a classroom of WebSocket students against a running server: broadcast latency", runLoadtest},
	"train-lesson": {"make the lesson models from scratch (corpus, tokenizer, training, quality bars)", runTrainLesson},
	"tokenize":     {"print the token ids (or pieces) of a text", runTokenize},
	"logits":       {"write the logits of every prompt position as float32", runLogits},
	"generate":     {"generate text after a prompt", runGenerate},
	"bench":        {"measure prompt processing and generation speed", runBench},
	"loadgen":      {"serve simulated users on a model through the scheduler: TTFT, TPOT, tokens/s, both phases", runLoadgen},
	"inspect":      {"describe a model file", runInspect},
	"pull":         {"fetch a GGUF model from the Hugging Face Hub into its cache (ORG/REPO[:QUANT]), where serve finds it", runPull},
	"heads":        {"score every attention head as an induction and a previous-token head, and measure copying without the induction heads", runHeads},
	"synth":        {"write a random-weight model of a given shape (for benchmarks and tests)", runSynth},
	"quantize":     {"write a model with its weights in fewer bits (F16 … Q4_K_M)", runQuantize},
	"quantlens":    {"where inside the model a weight type strays: the residual stream, heads and logit lens layer by layer against the file's own type", runQuantLens},
	"perplexity":   {"perplexity on a text, and KL divergence against a base model", runPerplexity},
	"compare":      {"run decoding strategies side by side on one prompt", runCompare},
	"check-lesson": {"check lesson files and verify their claims (expect: lines) on the engine", runCheckLesson},
}

// Has reports whether name is one of this package's commands.
func Has(name string) bool { _, ok := commands[name]; return ok }

// Usage lists the commands, one per line.
func Usage() string {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "  %-13s %s\n", n, commands[n].summary)
	}
	return b.String()
}

// Main runs the command line args (without the program name): no command
// serves the web app; -h lists the commands, and "help COMMAND" is
// "COMMAND -h".
func Main(ctx context.Context, env Env, args []string) int {
	if len(args) == 0 {
		return Run(ctx, env, "serve", nil)
	}
	if args[0] == "help" && len(args) == 2 {
		return Run(ctx, env, args[1], []string{"-h"})
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintf(env.Stdout, "usage: stepthrough [command] [flags]\n\ncommands (\"stepthrough <command> -h\" lists a command's flags):\n%s", Usage())
		return 0
	}
	return Run(ctx, env, args[0], args[1:])
}

// Run runs the named command and returns the process exit status.
func Run(ctx context.Context, env Env, name string, args []string) int {
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(env.Stderr, "stepthrough: unknown command %q\n", name)
		return 2
	}
	err := c.run(ctx, env, args)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(env.Stderr, "stepthrough %s: %v (see 'stepthrough %s -h')\n", name, err, name)
		return 2
	}
	fmt.Fprintf(env.Stderr, "stepthrough %s: %s\n", name, oneLine(err.Error()))
	return 1
}

type usageError struct{ error }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// newFlags returns a flag set that prints usage on -h (to stdout) and
// reports parse errors as one line.
func newFlags(env Env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // parse errors are reported as one line by parse
	helps[fs] = func() {
		fmt.Fprintf(env.Stdout, "usage: stepthrough %s %s\n", name, usage)
		fs.SetOutput(env.Stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// helps holds each flag set's -h text.
var helps = map[*flag.FlagSet]func(){}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			helps[fs]()
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return finite(fs)
}

// finite refuses a number flag given NaN or an infinity, which the flag
// package reads as numbers; each command checks its flags' ranges.
func finite(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok || err != nil {
			return
		}
		if v, ok := g.Get().(float64); ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
			err = usageError{fmt.Errorf("--%s %v: not a finite number", f.Name, v)}
		}
	})
	return err
}

func required(name, v string) error {
	if v == "" {
		return usageError{fmt.Errorf("--%s is required", name)}
	}
	return nil
}

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
	if os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		fmt.Fprintf(os.Stdout, "usage: stepthrough [command] [flags]\n\ncommands:\n  serve     run the web app (the default)\n%s", cli.Usage())
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
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(os.Stderr, "stepthrough serve: %v\n", err)
		return 2
	}
	modelDirs := []string{"models"}
	if *dirs != "" {
		modelDirs = append(modelDirs, strings.Split(*dirs, ",")...)
	} else if ref := filepath.Join("..", "shared", "reference", "models"); dirExists(ref) {
		modelDirs = append(modelDirs, ref) // until the lesson model lands, the reference model beside the checkout
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if msg := static.Missing(); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
	}
	s := server.New(server.Config{Addr: *addr, ModelsDirs: modelDirs, Logger: log})
	if len(s.Models()) == 0 {
		fmt.Fprintf(os.Stderr, "no models found in %s: add a .gguf or pass --models-dir\n", strings.Join(modelDirs, ", "))
	}
	err := s.Run(ctx, func(a string) { fmt.Printf("Stepthrough is serving on http://%s\n", a) })
	if err != nil {
		fmt.Fprintf(os.Stderr, "stepthrough serve: %v\n", err)
		return 1
	}
	return 0
}

func dirExists(d string) bool {
	st, err := os.Stat(d)
	return err == nil && st.IsDir()
}

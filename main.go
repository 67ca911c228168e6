// Command stepthrough runs a real language model one stage at a time.
//
//	stepthrough <command> [flags]
//
// Commands: tokenize, logits, generate, bench, inspect, synth. Run
// "stepthrough <command> -h" for a command's flags.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"stepthrough/engine/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	env := cli.Env{Stdout: os.Stdout, Stderr: os.Stderr}
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		fmt.Fprintf(os.Stdout, "usage: stepthrough <command> [flags]\n\ncommands:\n%s", cli.Usage())
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	os.Exit(cli.Run(ctx, env, os.Args[1], os.Args[2:]))
}

// Command stepthrough runs a real language model one stage at a time.
//
//	stepthrough [command] [flags]
//
// With no command it serves the web app. "stepthrough -h" lists the
// commands (package cli) and "stepthrough <command> -h" a command's flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"stepthrough/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, cli.Env{Stdout: os.Stdout, Stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

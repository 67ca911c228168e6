package cli

import (
	"context"
	"fmt"
	"strings"

	"stepthrough/loadtest"
)

// runLoadtest measures a classroom broadcast on a running server.
func runLoadtest(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "loadtest", "[--url http://127.0.0.1:8080[,http://…]] [--students 200] [--steps 100]")
	url := fs.String("url", "http://127.0.0.1:8080", "the running server to test, or comma-separated servers sharing a store and bus (the room starts on the first, students are spread over all)")
	students := fs.Int("students", 200, "WebSocket students in the room (1 to 5000)")
	steps := fs.Int("steps", 100, "instructor steps, one every 100 ms at most (1 to 100000)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *students < 1 || *students > 5000 {
		return usageError{fmt.Errorf("--students must be 1 to 5000, got %d", *students)}
	}
	if *steps < 1 || *steps > 100000 {
		return usageError{fmt.Errorf("--steps must be 1 to 100000, got %d", *steps)}
	}
	var bases []string
	for _, u := range strings.Split(*url, ",") {
		if u = strings.TrimRight(strings.TrimSpace(u), "/"); u != "" {
			bases = append(bases, u)
		}
	}
	if len(bases) == 0 || len(bases) > 64 {
		return usageError{fmt.Errorf("--url: give 1 to 64 server addresses, got %d", len(bases))}
	}
	r, err := loadtest.Run(ctx, bases, *students, *steps)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, r)
	return nil
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"stepthrough/loadtest"
)

// counts parses a comma-separated list of user counts.
func counts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("%q: want whole numbers from 1 to 1024, comma-separated", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// URLRun is one load measured on one server in one round.
type URLRun struct {
	Round int `json:"round"`
	loadtest.APIResult
}

// runLoadgenURL runs the load on each server for each user count, rounds
// times over, alternating (every round runs every server and count once,
// so the machine's noise weighs on them alike), and prints a table with
// each run's gain over one user in the same round.
func runLoadgenURL(ctx context.Context, env Env, urls []string, users []int, base loadtest.APILoad, rounds int, asJSON bool) error {
	if rounds < 1 || rounds > 16 {
		return usageError{fmt.Errorf("--rounds: %d, want 1 to 16", rounds)}
	}
	for _, u := range urls {
		ld := base
		ld.URL, ld.Users = strings.TrimSpace(u), users[0]
		if err := ld.Check(); err != nil {
			return usageError{err}
		}
	}
	var runs []URLRun
	for r := range rounds {
		for _, n := range users {
			for _, u := range urls {
				ld := base
				ld.URL, ld.Users = strings.TrimSpace(u), n
				res, err := loadtest.RunAPI(ctx, ld)
				if err != nil {
					return fmt.Errorf("%s with %d users: %w", ld.URL, n, err)
				}
				runs = append(runs, URLRun{Round: r + 1, APIResult: res})
			}
		}
	}
	if asJSON {
		return json.NewEncoder(env.Stdout).Encode(runs)
	}
	writeURLTable(env.Stdout, base, runs)
	return nil
}

func writeURLTable(w io.Writer, ld loadtest.APILoad, runs []URLRun) {
	arrivals := "all at once"
	if ld.Rate > 0 {
		arrivals = fmt.Sprintf("Poisson, %g a second", ld.Rate)
	}
	fmt.Fprintf(w, "load: streaming /v1/completions, users %s, %d prompt words and %d generated tokens each (ignore_eos), temperature %g, seed %d; measured on the client\n\n",
		arrivals, ld.PromptWords, ld.MaxTokens, ld.Temperature, ld.Seed)
	fmt.Fprintln(w, "| server | users | round | prompt tokens | TTFT p50 / p95 ms | TPOT p50 / p95 ms | generated tokens/s | gain over 1 user | errors |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	one := map[[2]any]float64{} // (url, round) → one user's tokens/s
	for _, r := range runs {
		if r.Users == 1 {
			one[[2]any{r.URL, r.Round}] = r.TokensPerSecond
		}
	}
	for _, r := range runs {
		gain := "–"
		if t, ok := one[[2]any{r.URL, r.Round}]; ok && t > 0 {
			gain = fmt.Sprintf("%.2f×", r.TokensPerSecond/t)
		}
		prompt := 0
		if ok := r.Users - r.Errors; ok > 0 {
			prompt = r.PromptTokens / ok
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %s / %s | %s / %s | %.1f | %s | %d |\n", r.URL, r.Users, r.Round, prompt,
			msOf(r.TTFT.P50), msOf(r.TTFT.P95), msOf(r.TPOT.P50), msOf(r.TPOT.P95), r.TokensPerSecond, gain, r.Errors)
	}
}

func msOf(d time.Duration) string { return fmt.Sprintf("%.1f", ms(d)) }

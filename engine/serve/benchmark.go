package serve

import (
	"context"
	"fmt"
	"io"
	"time"

	"stepthrough/engine"
)

// Benchmark is one load measured under one or more settings on one
// machine: what loadgen prints (and its --json), and what the serving
// page's "Measuring honestly" shows.
type Benchmark struct {
	Model    string    `json:"model"`
	Hardware string    `json:"hardware"`
	Backend  string    `json:"backend"`
	Runs     []*Report `json:"runs"`
	// KVBytesPerToken is the model's cache per position; Context the
	// positions a request may use.
	KVBytesPerToken int `json:"kv_bytes_per_token"`
	Context         int `json:"context"`
}

// WriteTable writes the benchmark as loadgen prints it: the model, the
// hardware, the backend and the load, then one row per setting.
func (b Benchmark) WriteTable(w io.Writer) {
	if len(b.Runs) == 0 {
		return
	}
	ld := b.Runs[0].Load
	arrivals := "all at once"
	if ld.Rate > 0 {
		arrivals = fmt.Sprintf("Poisson, %g a second", ld.Rate)
	}
	fmt.Fprintf(w, "model: %s\nhardware: %s\nbackend: %s\nload: %d users (%s), %d prompt tokens and %s generated each, temperature %g, seed %d\n\n",
		b.Model, b.Hardware, b.Backend, ld.Users, arrivals, ld.PromptTokens, genText(ld), ld.Temperature, ld.Seed)
	fmt.Fprintln(w, "| policy | chunked prefill | KV cache | TTFT p50 / p95 ms | TPOT p50 / p95 ms | queued p95 ms | tokens/s (generated) | prefill s | decode s | steps | mean batch | KV held at peak | contiguous at full context | preempted |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, run := range b.Runs {
		s := run.Summary
		ch := "off"
		if run.Options.ChunkedPrefill {
			ch = "on"
		}
		cache := "contiguous"
		if run.Options.Paged {
			cache = fmt.Sprintf("paged (%d)", run.Options.BlockSize)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s / %s | %s / %s | %s | %.1f | %.2f | %.2f | %d | %.1f | %s | %s | %d |\n", run.Options.Policy, ch, cache,
			msText(s.TTFT.P50), msText(s.TTFT.P95), msText(s.TPOT.P50), msText(s.TPOT.P95), msText(s.Queued.P95), s.TokensPerSecond,
			s.PrefillTime.Seconds(), s.DecodeTime.Seconds(), s.Steps, s.MeanBatch,
			mib(s.PeakKVHeld*b.KVBytesPerToken), mib(s.PeakRunning*b.Context*b.KVBytesPerToken), s.Preemptions)
	}
}

func msText(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

func genText(ld Load) string {
	if ld.MinTokens > 0 {
		return fmt.Sprintf("%d to %d", ld.MinTokens, ld.MaxTokens)
	}
	return fmt.Sprint(ld.MaxTokens)
}

func mib(b int) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// Measure runs the load ld under each setting in turn, rounds times over
// (alternating: every round runs every setting once, so a noisy machine
// weighs on them alike), and gathers the reports in the order they ran.
func Measure(ctx context.Context, model string, l *engine.Loaded, settings []Options, ld Load, rounds int) (Benchmark, error) {
	b := Benchmark{Model: model, Hardware: Hardware(), Backend: l.Backend().String(), KVBytesPerToken: l.Model.KVBytesPerToken(), Context: l.Context()}
	if rounds < 1 || rounds > 16 {
		return b, fmt.Errorf("rounds: %d, want 1 to 16", rounds)
	}
	for range rounds {
		for _, o := range settings {
			rep, err := RunLoad(ctx, l, o, ld, nil, nil)
			if err != nil {
				return b, err
			}
			b.Runs = append(b.Runs, rep)
		}
	}
	return b, nil
}

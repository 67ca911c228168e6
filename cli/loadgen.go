package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/model"
	"stepthrough/engine/serve"
)

// LoadgenResult is loadgen's --json output: the hardware, and for each
// setting run, its options and measured summary.
type LoadgenResult struct {
	Model    string          `json:"model"`
	Hardware string          `json:"hardware"`
	Backend  string          `json:"backend"`
	Runs     []*serve.Report `json:"runs"`
	// KVBytesPerToken is the model's cache per position; Context the
	// positions a request may use.
	KVBytesPerToken int `json:"kv_bytes_per_token"`
	Context         int `json:"context"`
}

func runLoadgen(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "loadgen", "--model PATH [--users 16] [--rate 0] [--prompt-tokens 32] [--max-tokens 32] [--min-tokens N] [--policy continuous,static] [--chunked on,off] [--max-seqs 16] [--budget 0] [--cache contiguous,paged] [--json]")
	path := fs.String("model", "", "GGUF model `file`")
	users := fs.Int("users", 16, "simulated users, one request each (1 to 256)")
	rate := fs.Float64("rate", 0, "arrivals per second, a Poisson process (0: all at once)")
	promptTokens := fs.Int("prompt-tokens", 32, "prompt tokens per request")
	maxTokens := fs.Int("max-tokens", 32, "tokens generated per request")
	minTokens := fs.Int("min-tokens", 0, "when set, each reply's length is drawn uniformly from --min-tokens to --max-tokens")
	temperature := fs.Float64("temperature", 0, "sampling temperature (0: greedy)")
	seed := fs.Uint64("seed", 1, "seed of the arrivals and the samplers")
	stopAtEOS := fs.Bool("stop-at-eos", false, "let a reply end at the model's end of generation (by default every request generates --max-tokens, so every user costs the same)")
	policies := fs.String("policy", "continuous", "batching `policies` to run the same load under, comma-separated: continuous, static")
	chunked := fs.String("chunked", "on", "chunked prefill: on, off, or on,off to run both")
	maxSeqs := fs.Int("max-seqs", 16, "requests running at once (1 to 256)")
	budget := fs.Int("budget", 0, "tokens per step (0: the model's pass limit, 512)")
	kv := fs.Int("kv", 0, "KV-cache positions shared by running requests (0: max-seqs × context)")
	kvKinds := fs.String("cache", "contiguous", "KV caches to run the load under, comma-separated: contiguous (each request reserves its prompt and longest reply), paged (blocks from one pool)")
	blockSize := fs.Int("block-size", 16, "positions per block of the paged cache")
	threads := fs.Int("t", 0, "CPU threads (0: all cores)")
	backend := backendFlag(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required("model", *path); err != nil {
		return err
	}
	ld := serve.Load{Users: *users, Rate: *rate, PromptTokens: *promptTokens, MaxTokens: *maxTokens, MinTokens: *minTokens, Temperature: *temperature, Seed: *seed, IgnoreEOS: !*stopAtEOS}
	if err := ld.Check(); err != nil {
		return usageError{err}
	}
	if *blockSize < 1 || *blockSize > 1024 {
		return usageError{fmt.Errorf("--block-size: %d, want 1 to 1024 positions", *blockSize)}
	}
	var settings []serve.Options
	for _, p := range strings.Split(*policies, ",") {
		for _, c := range strings.Split(*chunked, ",") {
			if c != "on" && c != "off" {
				return usageError{fmt.Errorf("--chunked: %q, want on or off", c)}
			}
			for _, k := range strings.Split(*kvKinds, ",") {
				if k != "contiguous" && k != "paged" {
					return usageError{fmt.Errorf("--cache: %q, want contiguous or paged", k)}
				}
				o := serve.Options{Policy: serve.Policy(strings.TrimSpace(p)), MaxSeqs: *maxSeqs, TokenBudget: *budget, ChunkedPrefill: c == "on", KVPositions: *kv}
				if k == "paged" {
					o.Paged, o.BlockSize = true, *blockSize
				}
				settings = append(settings, o)
			}
		}
	}
	if err := checkBackend(*backend); err != nil {
		return err
	}
	m, err := model.Load(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	l, err := engine.Load(m, engine.Options{Threads: *threads, Backend: *backend}) // the model's context (at most 2048): caches grow as they fill
	if err != nil {
		return err
	}
	defer l.Close()
	res := LoadgenResult{Model: filepath.Base(*path), Hardware: serve.Hardware(), Backend: l.Backend().String(), KVBytesPerToken: m.KVBytesPerToken(), Context: l.Context()}
	for _, o := range settings {
		rep, err := serve.RunLoad(ctx, l, o, ld, nil, nil)
		if err != nil {
			return usageError{err}
		}
		res.Runs = append(res.Runs, rep)
	}
	if *asJSON {
		return json.NewEncoder(env.Stdout).Encode(res)
	}
	PrintLoadgen(env.Stdout, res)
	return nil
}

func msText(d time.Duration) string { return fmt.Sprintf("%.1f", ms(d)) }

// PrintLoadgen writes a loadgen result as a table, one row per setting.
func PrintLoadgen(w io.Writer, r LoadgenResult) {
	if len(r.Runs) == 0 {
		return
	}
	ld := r.Runs[0].Load
	arrivals := "all at once"
	if ld.Rate > 0 {
		arrivals = fmt.Sprintf("Poisson, %g a second", ld.Rate)
	}
	fmt.Fprintf(w, "model: %s\nhardware: %s\nbackend: %s\nload: %d users (%s), %d prompt tokens and %s generated each, temperature %g, seed %d\n\n",
		r.Model, r.Hardware, r.Backend, ld.Users, arrivals, ld.PromptTokens, genText(ld), ld.Temperature, ld.Seed)
	fmt.Fprintln(w, "| policy | chunked prefill | KV cache | TTFT p50 / p95 ms | TPOT p50 / p95 ms | queued p95 ms | tokens/s (generated) | prefill s | decode s | steps | mean batch | KV held at peak | contiguous at full context | preempted |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, run := range r.Runs {
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
			mib(s.PeakKVHeld*r.KVBytesPerToken), mib(s.PeakRunning*r.Context*r.KVBytesPerToken), s.Preemptions)
	}
}

func genText(ld serve.Load) string {
	if ld.MinTokens > 0 {
		return fmt.Sprintf("%d to %d", ld.MinTokens, ld.MaxTokens)
	}
	return fmt.Sprint(ld.MaxTokens)
}

func mib(b int) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"stepthrough/engine"
	"stepthrough/engine/model"
	"stepthrough/engine/serve"
	"stepthrough/loadtest"
)

// LoadgenResult is loadgen's --json output (serve.Benchmark).
type LoadgenResult = serve.Benchmark

func runLoadgen(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "loadgen", "--model PATH [--users 16] [--rate 0] [--prompt-tokens 32] [--max-tokens 32] [--min-tokens N] [--policy continuous,static] [--chunked on,off] [--max-seqs 16] [--budget 0] [--cache contiguous,paged] [--rounds 1] [--json]\n   or: loadgen --url http://HOST/v1[,URL2…] --model NAME [--users 1,8] [--rate 0] [--prompt-words 24] [--max-tokens 32] [--rounds 1] [--key KEY] [--json]")
	path := fs.String("model", "", "GGUF model `file` (with --url: the model name sent)")
	usersList := fs.String("users", "16", "simulated users, one request each (1 to 256; with --url a list such as 1,8, each run in turn)")
	urls := fs.String("url", "", "drive OpenAI-compatible servers over HTTP instead: API `bases` such as http://127.0.0.1:8080/v1, comma-separated, run alternately")
	words := fs.Int("prompt-words", 24, "with --url: words of story text per prompt (the servers count the tokens)")
	key := fs.String("key", os.Getenv("OPENAI_API_KEY"), "with --url: the API key sent (default: $OPENAI_API_KEY)")
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
	threads := fs.Int("t", 0, "CPU threads (0: one per core)")
	backend := backendFlag(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	rounds := fs.Int("rounds", 1, "runs of every setting, alternating (1 to 16): the spread between runs of one setting shows the machine's noise")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required("model", *path); err != nil {
		return err
	}
	users, err := counts(*usersList)
	if err != nil {
		return usageError{fmt.Errorf("--users: %w", err)}
	}
	if *urls != "" {
		base := loadtest.APILoad{Model: *path, Key: *key, Rate: *rate, PromptWords: *words, MaxTokens: *maxTokens, Temperature: *temperature, Seed: *seed}
		return runLoadgenURL(ctx, env, strings.Split(*urls, ","), users, base, *rounds, *asJSON)
	}
	if len(users) != 1 {
		return usageError{fmt.Errorf("--users: a list of counts needs --url")}
	}
	ld := serve.Load{Users: users[0], Rate: *rate, PromptTokens: *promptTokens, MaxTokens: *maxTokens, MinTokens: *minTokens, Temperature: *temperature, Seed: *seed, IgnoreEOS: !*stopAtEOS}
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
	res, err := serve.Measure(ctx, filepath.Base(*path), l, settings, ld, *rounds)
	if err != nil {
		return usageError{err}
	}
	if *asJSON {
		return json.NewEncoder(env.Stdout).Encode(res)
	}
	res.WriteTable(env.Stdout)
	return nil
}

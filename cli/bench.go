package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/model"
	"stepthrough/engine/speculative"
)

// BenchResult is bench's --json output. pp is prompt processing (one batch
// of pp_tokens), tg is generation (tg_tokens single-token steps), each
// from a cache holding depth positions (0: empty); rates are tokens per
// second, mean and standard deviation over the runs, as llama-bench
// defines them.
type BenchResult struct {
	Model    string  `json:"model"`
	Backend  string  `json:"backend"`
	Threads  int     `json:"threads"`
	Device   string  `json:"device"`
	Depth    int     `json:"depth,omitempty"`
	PPTokens int     `json:"pp_tokens"`
	PPTPS    float64 `json:"pp_tps"`
	PPSD     float64 `json:"pp_sd"`
	TGTokens int     `json:"tg_tokens"`
	TGTPS    float64 `json:"tg_tps"`
	TGSD     float64 `json:"tg_sd"`
}

func runBench(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "bench", "--model PATH [-p 128] [-n 64] [-d 0] [-r 3] [-t THREADS] [--json] [--draft PATH [--draft-k K]] [--batch 1,2,4,8] | --suite FILE,FILE,... [-r 3] [-t N] [--json]")
	path := fs.String("model", "", "GGUF model `file`")
	pp := fs.Int("p", 128, "prompt tokens per prompt-processing run (0: skip)")
	tg := fs.Int("n", 64, "tokens per generation run (0: skip)")
	depth := fs.Int("d", 0, "positions already in the KV cache when each prompt-processing and generation run starts (llama-bench's -d): the speed at that depth of context")
	reps := fs.Int("r", 3, "repetitions (after one warm-up)")
	threads := fs.Int("t", 0, "CPU threads (0: one per core)")
	backend := backendFlag(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	draftPath := fs.String("draft", "", "measure speculative decoding with this draft model `file` (or self:N, the model's own first N layers): greedy generation of -n tokens after -p, plain and with the draft")
	draftK := fs.Int("draft-k", 4, "tokens the draft proposes per round (1 to 16)")
	suite := fs.String("suite", "", "measure each model `file` of this comma-separated list (no --model) at pp128, pp512, tg64 and a batch of 8 sequences (32 prompt tokens, 32 generated each), printing one table")
	batchList := fs.String("batch", "", "measure batched decoding: for each batch size B in this comma-separated `list`, B sequences prefill -p tokens each and generate -n together (aggregate tokens/s and each sequence's time per output token)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *suite != "" {
		return benchSuite(ctx, env, strings.Split(*suite, ","), *reps, engine.Options{Threads: *threads, Backend: *backend}, *asJSON)
	}
	if err := required("model", *path); err != nil {
		return err
	}
	if *pp < 0 || *tg < 0 || *reps < 1 || *pp+*tg == 0 || *depth < 0 {
		return usageError{fmt.Errorf("need -p >= 0, -n >= 0 (not both 0), -d >= 0 and -r >= 1")}
	}
	if *depth > 0 && (*batchList != "" || *draftPath != "") {
		return usageError{fmt.Errorf("-d measures plain prompt processing and generation: it does not go with --batch or --draft")}
	}
	if err := checkBackend(*backend); err != nil {
		return err
	}
	m, err := model.Load(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	if need := *depth + max(*pp, *tg); need > m.Config.ContextLen {
		return usageError{fmt.Errorf("-d %d with -p %d and -n %d needs %d positions; the model's context is %d", *depth, *pp, *tg, need, m.Config.ContextLen)}
	}
	if *batchList != "" {
		sizes, err := parseBatchList(*batchList)
		if err != nil {
			return err
		}
		return benchBatch(ctx, env, m, *path, sizes, *pp, *tg, *reps, engine.Options{Threads: *threads, Backend: *backend}, *asJSON)
	}
	if *draftPath != "" {
		if *draftK < 1 || *draftK > speculative.MaxK || *tg < 1 {
			return usageError{fmt.Errorf("--draft needs --draft-k 1 to %d and -n at least 1", speculative.MaxK)}
		}
		return benchSpeculative(ctx, env, m, *draftPath, *draftK, *pp, *tg, *reps, engine.Options{Threads: *threads, Backend: *backend}, *asJSON)
	}
	r, info, err := engine.NewBackend(m, engine.Options{Threads: *threads, Context: *depth + max(*pp, *tg, 1), Backend: *backend})
	if err != nil {
		return err
	}
	defer r.Close()
	if info.Note != "" && *backend == "vulkan" {
		fmt.Fprintln(env.Stderr, oneLine(info.Note))
	}
	res := BenchResult{Model: filepath.Base(*path), Backend: info.Name, Threads: info.Threads, Device: info.String(), Depth: *depth, PPTokens: *pp, TGTokens: *tg}
	if res.PPTPS, res.PPSD, res.TGTPS, res.TGSD, err = measurePPTG(ctx, r, m, *pp, *tg, *depth, *reps); err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(env.Stdout).Encode(res)
	}
	fmt.Fprintf(env.Stdout, "device: %s\n\n", res.Device)
	fmt.Fprintf(env.Stdout, "| %-24s | %10s | %8s | %-7s | %7s | %-14s | %20s |\n", "model", "size", "params", "backend", "threads", "test", "t/s")
	fmt.Fprintf(env.Stdout, "| %-24s | %10s | %8s | %-7s | %7s | %-14s | %20s |\n", "---", "---:", "---:", "---", "---:", "---", "---:")
	size := fmt.Sprintf("%.2f MiB", float64(fileBytes(m))/(1<<20))
	params := fmt.Sprintf("%.2f M", float64(m.Params())/1e6)
	for _, row := range []struct {
		name     string
		n        int
		mean, sd float64
	}{{"pp", *pp, res.PPTPS, res.PPSD}, {"tg", *tg, res.TGTPS, res.TGSD}} {
		if row.n > 0 {
			test := fmt.Sprintf("%s%d", row.name, row.n)
			if *depth > 0 {
				test += fmt.Sprintf(" @ d%d", *depth) // llama-bench's name for it
			}
			fmt.Fprintf(env.Stdout, "| %-24s | %10s | %8s | %-7s | %7d | %-14s | %20s |\n", res.Model, size, params, res.Backend, res.Threads,
				test, fmt.Sprintf("%.2f ± %.2f", row.mean, row.sd))
		}
	}
	return nil
}

func meanSD(x []float64) (mean, sd float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	if len(x) < 2 {
		return mean, 0
	}
	for _, v := range x {
		sd += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sd / float64(len(x)-1))
}

func fileBytes(m *model.Model) uint64 {
	var n uint64
	for _, b := range m.TypeBytes() {
		n += b
	}
	return n
}

// measurePPTG measures prompt processing (one batch of pp tokens) and
// generation (tg single-token steps), each from a cache holding depth
// positions (filled once, untimed; each run rolls back to it) on r: tokens
// per second, mean and standard deviation over reps runs after a warm-up,
// as llama-bench defines them (0 skips a test).
func measurePPTG(ctx context.Context, r engine.Backend, m *model.Model, pp, tg, depth, reps int) (ppTPS, ppSD, tgTPS, tgSD float64, err error) {
	rng := rand.New(rand.NewPCG(42, 42))
	tokens := func(n int) []int32 {
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(rng.IntN(m.Config.Vocab))
		}
		if v := m.Tokenizer.Vocab(); v.AddBOS && v.BOS >= 0 && n > 0 {
			ids[0] = v.BOS
		}
		return ids
	}
	r.Reset()
	if depth > 0 {
		if _, err = r.Forward(ctx, tokens(depth), false); err != nil {
			return
		}
	}
	runPP := func() (time.Duration, error) {
		ids := tokens(pp)
		r.Truncate(depth)
		start := time.Now()
		_, err := r.Forward(ctx, ids, false)
		return time.Since(start), err
	}
	runTG := func() (time.Duration, error) {
		ids := tokens(tg)
		r.Truncate(depth)
		start := time.Now()
		for i := range ids {
			if _, err := r.Forward(ctx, ids[i:i+1], false); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
	measure := func(n int, run func() (time.Duration, error)) (mean, sd float64, err error) {
		if n == 0 {
			return 0, 0, nil
		}
		if _, err := run(); err != nil { // warm-up
			return 0, 0, err
		}
		var rates []float64
		for i := 0; i < reps; i++ {
			if err := ctx.Err(); err != nil {
				return 0, 0, err
			}
			d, err := run()
			if err != nil {
				return 0, 0, err
			}
			rates = append(rates, float64(n)/d.Seconds())
		}
		mean, sd = meanSD(rates)
		return mean, sd, nil
	}
	if ppTPS, ppSD, err = measure(pp, runPP); err != nil {
		return
	}
	tgTPS, tgSD, err = measure(tg, runTG)
	return
}

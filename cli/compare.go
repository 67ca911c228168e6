package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"stepthrough/engine"
	"stepthrough/engine/compare"
	"stepthrough/engine/model"
	"stepthrough/engine/speculative"
)

type laneFlags []string

func (l *laneFlags) String() string     { return strings.Join(*l, " | ") }
func (l *laneFlags) Set(v string) error { *l = append(*l, v); return nil }

func runCompare(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "compare", `--model PATH --prompt TEXT -n N --lane "greedy" --lane "temperature=0.7,top-p=0.9,seed=1" --lane "beam=4" [--json]`)
	path := fs.String("model", "", "GGUF model `file`")
	prompt := fs.String("prompt", "", "prompt text (BOS added when the model asks for it)")
	n := fs.Int("n", 32, "tokens per lane")
	seed := fs.String("seed", "", "seed shared by the lanes that set none (unset: each draws its own)")
	threads := fs.Int("t", 0, "CPU threads (0: one per core)")
	backend := fs.String("backend", "auto", "auto, cpu or vulkan (every lane runs on it)")
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	var lanes laneFlags
	fs.Var(&lanes, "lane", "a strategy: greedy, beam=W[,length-penalty=A], sampler settings key=value,…, or spec=DRAFT[,k=K] with sampler settings (speculative decoding with a draft file or self:N; \"greedy,spec=…\" for greedy); a sampling or greedy lane may add ablate=L4H5;L2mlp and steer=L2:happy|sad*4 (repeat 2 to 6 times)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required("model", *path); err != nil {
		return err
	}
	if len(lanes) < 2 || len(lanes) > 6 {
		return usageError{fmt.Errorf("give 2 to 6 --lane flags, got %d", len(lanes))}
	}
	if *n < 1 || *n > 1024 {
		return usageError{fmt.Errorf("-n must be 1 to 1024, got %d", *n)}
	}
	var shared *uint64
	if *seed != "" {
		v, err := strconv.ParseUint(*seed, 10, 64)
		if err != nil {
			return usageError{fmt.Errorf("invalid seed %q: must be a whole number", *seed)}
		}
		shared = &v
	}
	var strategies []compare.Strategy
	for _, l := range lanes {
		st, err := compare.ParseLane(l, shared)
		if err != nil {
			return usageError{err}
		}
		strategies = append(strategies, st)
	}
	m, err := model.Load(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	lm, err := engine.Load(m, engine.Options{Threads: *threads, Backend: *backend})
	if err != nil {
		return err
	}
	defer lm.Close()
	if note := lm.Backend().Note; note != "" && *backend == "vulkan" {
		fmt.Fprintln(env.Stderr, note)
	}
	ids := m.Tokenizer.EncodeIDs(*prompt, true)
	var drafts []interface{ Close() } // a draft's engine, then its model
	defer func() {
		for _, d := range drafts {
			d.Close()
		}
	}()
	res, err := compare.Run(ctx, lm, ids, strategies, compare.Options{N: *n, Draft: func(name string) (*engine.Loaded, error) {
		dm, err := speculative.LoadDraft(m, name)
		if err != nil {
			return nil, err
		}
		dl, err := engine.Load(dm, engine.Options{Threads: *threads, Backend: *backend})
		if err != nil {
			dm.Close()
			return nil, err
		}
		drafts = append(drafts, dl, closer(dm.Close))
		return dl, nil
	}})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	tk := m.Tokenizer
	fmt.Fprintf(env.Stdout, "prompt: %q (%d tokens)\n", *prompt, len(ids))
	fmt.Fprintf(env.Stdout, "prefill once %.3f ms + %d cache copies %.3f ms, versus %d separate prefills %.3f ms: saved %.3f ms (measured)\n",
		res.PrefillMS, len(res.Lanes), res.CopyMS, len(res.Lanes), res.SeparatePrefillMS, res.SeparatePrefillMS-res.PrefillMS-res.CopyMS)
	if res.Divergence < 0 {
		fmt.Fprintln(env.Stdout, "the lanes never diverge")
	} else {
		fmt.Fprintf(env.Stdout, "the lanes diverge at step %d (marked *)\n", res.Divergence)
	}
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprint(w, "step")
	for i, l := range res.Lanes {
		fmt.Fprintf(w, "\tlane %d: %s", i+1, l.Strategy.Spec)
	}
	fmt.Fprintln(w)
	longest := 0
	for _, l := range res.Lanes {
		longest = max(longest, len(l.Tokens))
	}
	for i := 0; i < longest; i++ {
		mark := " "
		if i == res.Divergence {
			mark = "*"
		}
		fmt.Fprintf(w, "%s%d", mark, i)
		for _, l := range res.Lanes {
			if i < len(l.Tokens) {
				fmt.Fprintf(w, "\t%q (%d)", string(tk.Bytes(l.Tokens[i])), l.Tokens[i])
			} else {
				fmt.Fprint(w, "\t")
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "\ntext")
	for _, l := range res.Lanes {
		fmt.Fprintf(w, "\t%q", tk.Decode(l.Tokens))
	}
	for _, row := range []struct {
		name string
		f    func(compare.Lane) string
	}{
		{"tokens", func(l compare.Lane) string { return strconv.Itoa(l.Metrics.Tokens) }},
		{"mean log p", func(l compare.Lane) string { return fmt.Sprintf("%.4f", l.Metrics.MeanLogProb) }},
		{"perplexity", func(l compare.Lane) string { return fmt.Sprintf("%.3f", l.Metrics.Perplexity) }},
		{"distinct-1/2", func(l compare.Lane) string {
			return fmt.Sprintf("%.2f / %.2f", l.Metrics.Distinct1, l.Metrics.Distinct2)
		}},
		{"repeated 3-grams", func(l compare.Lane) string { return strconv.Itoa(l.Metrics.RepeatedTrigrams) }},
		{"stop", func(l compare.Lane) string { return l.Metrics.Stop }},
		{"speed (measured)", compare.Lane.Speed},
		{"draft", compare.Lane.DraftSummary},
	} {
		fmt.Fprintf(w, "\n%s", row.name)
		for _, l := range res.Lanes {
			fmt.Fprintf(w, "\t%s", row.f(l))
		}
	}
	fmt.Fprintln(w)
	for i, l := range res.Lanes {
		if l.Beam != nil {
			fmt.Fprintf(w, "\nlane %d beam: %s (log p %.4f, %d finished hypotheses)\n", i+1, l.Beam.Why, l.Beam.Best.LogProb, len(l.Beam.Finished))
		}
	}
	return w.Flush()
}

// closer adapts a Close that returns an error.
type closer func() error

func (c closer) Close() { c() }

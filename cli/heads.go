package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"stepthrough/engine"
	"stepthrough/engine/model"
)

// HeadsResult is what `heads` prints: every head's induction and
// previous-token scores, the heads above the threshold, and copying of
// repeated text with and without those heads.
type HeadsResult struct {
	SeqLen      int                `json:"seq_len"`
	Reps        int                `json:"reps"`
	Heads       []engine.HeadScore `json:"heads"` // by induction score, highest first
	Threshold   float64            `json:"threshold"`
	Induction   []string           `json:"induction_heads"` // L4H5, above the threshold
	CopyIntact  float64            `json:"copy_intact"`
	CopyWithout float64            `json:"copy_without_induction_heads"`
}

func runHeads(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "heads", "--model PATH [--len 20] [--reps 8] [--seed 1] [--threshold 0.3] [--json]")
	path := fs.String("model", "", "GGUF model `file`")
	seqLen := fs.Int("len", 20, "random tokens per sequence, read twice (2 to 256)")
	reps := fs.Int("reps", 8, "sequences (1 to 64)")
	seed := fs.Uint64("seed", 1, "the seed the sequences are drawn with")
	threshold := fs.Float64("threshold", 0.3, "the induction score a head needs to be named an induction head")
	threads := fs.Int("t", 0, "CPU threads (0: one per core)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required("model", *path); err != nil {
		return err
	}
	m, err := model.Load(*path)
	if err != nil {
		return err
	}
	defer m.Close()
	seqs, err := engine.RepeatedRandom(m.Tokenizer, m.Config.Vocab, *seqLen, *reps, *seed)
	if err != nil {
		return usageError{err}
	}
	l, err := engine.Load(m, engine.Options{Threads: *threads, Backend: "cpu", Context: 2**seqLen + 1})
	if err != nil {
		return err
	}
	defer l.Close()
	res, err := measureHeads(ctx, l, seqs, *threshold)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(env.Stdout).Encode(res)
	}
	res.write(env)
	return nil
}

// measureHeads scores the heads, names the induction heads and measures
// copying with them and without them.
func measureHeads(ctx context.Context, l *engine.Loaded, seqs [][]int32, threshold float64) (*HeadsResult, error) {
	hs, err := l.ScoreHeads(ctx, seqs)
	if err != nil {
		return nil, err
	}
	res := &HeadsResult{SeqLen: hs.SeqLen, Reps: hs.Reps, Threshold: threshold, Heads: hs.List()}
	off := hs.Above(threshold)
	for _, e := range off.Edits {
		res.Induction = append(res.Induction, e.String())
	}
	hits, total, err := l.CopyCount(ctx, seqs, nil)
	if err != nil {
		return nil, err
	}
	res.CopyIntact = float64(hits) / float64(total)
	res.CopyWithout = res.CopyIntact
	if len(off.Edits) > 0 {
		if hits, total, err = l.CopyCount(ctx, seqs, off); err != nil {
			return nil, err
		}
		res.CopyWithout = float64(hits) / float64(total)
	}
	return res, nil
}

func (r *HeadsResult) write(env Env) {
	fmt.Fprintf(env.Stdout, "%d random sequences of %d tokens, each read twice\n\n", r.Reps, r.SeqLen)
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "head\tinduction\tprevious token")
	for _, h := range r.Heads {
		fmt.Fprintf(w, "%s\t%.3f\t%.3f\n", h.Head, h.Induction, h.PrevToken)
	}
	w.Flush()
	fmt.Fprintf(env.Stdout, "\ninduction heads (score ≥ %g): %v\n", r.Threshold, r.Induction)
	fmt.Fprintf(env.Stdout, "copying of the repeated half (greedy): %.1f%% intact", 100*r.CopyIntact)
	if len(r.Induction) > 0 {
		fmt.Fprintf(env.Stdout, ", %.1f%% with those heads switched off", 100*r.CopyWithout)
	}
	fmt.Fprintln(env.Stdout)
}

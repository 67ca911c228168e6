package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/model"
)

// BatchBenchResult is bench --batch's --json output: for each batch size
// B, B sequences each prefill pp_tokens and then generate tg_tokens
// together (one decode step advances all B), as llama-batched-bench
// measures. Rates are tokens per second over all sequences, means over the
// runs; TPOT is the time per output token each sequence sees.
type BatchBenchResult struct {
	Model    string          `json:"model"`
	Backend  string          `json:"backend"`
	Threads  int             `json:"threads"`
	Device   string          `json:"device"`
	PPTokens int             `json:"pp_tokens"`
	TGTokens int             `json:"tg_tokens"`
	Rows     []BatchBenchRow `json:"rows"`
}

// BatchBenchRow is one batch size's figures.
type BatchBenchRow struct {
	Batch  int     `json:"batch"`
	PPTPS  float64 `json:"pp_tps"`  // prompt tokens of all sequences per second of prefill
	TGTPS  float64 `json:"tg_tps"`  // generated tokens of all sequences per second of decoding
	TGSD   float64 `json:"tg_sd"`   // standard deviation of tg_tps over the runs
	TPOTMs float64 `json:"tpot_ms"` // milliseconds per decode step (each sequence's time per output token)
	Gain   float64 `json:"gain"`    // tg_tps over the first row's
}

// parseBatchList reads "1,2,4,8".
func parseBatchList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || b < 1 || b > 256 {
			return nil, usageError{fmt.Errorf("--batch: %q is not a batch size from 1 to 256", f)}
		}
		out = append(out, b)
	}
	return out, nil
}

func benchBatch(ctx context.Context, env Env, m *model.Model, path string, sizes []int, pp, tg, reps int, opt engine.Options, asJSON bool) error {
	if pp < 1 || tg < 1 {
		return usageError{fmt.Errorf("--batch needs -p and -n of at least 1")}
	}
	opt.Context = pp + tg
	l, err := engine.Load(m, opt)
	if err != nil {
		return err
	}
	defer l.Close()
	info := l.Backend()
	res := BatchBenchResult{Model: filepath.Base(path), Backend: info.Name, Threads: info.Threads, Device: info.String(), PPTokens: pp, TGTokens: tg}
	for _, b := range sizes {
		row, err := benchOneBatch(ctx, l, b, pp, tg, reps)
		if err != nil {
			return fmt.Errorf("batch %d: %w", b, err)
		}
		if len(res.Rows) > 0 {
			row.Gain = row.TGTPS / res.Rows[0].TGTPS
		} else {
			row.Gain = 1
		}
		res.Rows = append(res.Rows, row)
	}
	if asJSON {
		return json.NewEncoder(env.Stdout).Encode(res)
	}
	fmt.Fprintf(env.Stdout, "model: %s, %s; %d prompt tokens and %d generated per sequence\n\n", res.Model, res.Device, pp, tg)
	fmt.Fprintf(env.Stdout, "| %5s | %12s | %18s | %9s | %6s |\n", "B", "pp t/s", "tg t/s (all)", "TPOT ms", "gain")
	fmt.Fprintf(env.Stdout, "| %5s | %12s | %18s | %9s | %6s |\n", "---:", "---:", "---:", "---:", "---:")
	for _, r := range res.Rows {
		fmt.Fprintf(env.Stdout, "| %5d | %12.1f | %18s | %9.2f | %5.2f× |\n", r.Batch, r.PPTPS, fmt.Sprintf("%.1f ± %.1f", r.TGTPS, r.TGSD), r.TPOTMs, r.Gain)
	}
	return nil
}

// benchOneBatch measures b sequences: a warm-up, then reps runs of a
// batched prefill (whole prompts per pass, as many as fit) and tg batched
// decode steps.
func benchOneBatch(ctx context.Context, l *engine.Loaded, b, pp, tg, reps int) (BatchBenchRow, error) {
	m := l.Model
	sessions := make([]*engine.Session, b)
	for i := range sessions {
		s, err := l.NewSession(pp + tg)
		if err != nil {
			return BatchBenchRow{}, err
		}
		defer s.Close()
		sessions[i] = s
	}
	rng := rand.New(rand.NewPCG(42, uint64(b)))
	ids := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(rng.IntN(m.Config.Vocab))
		}
		return out
	}
	items := make([]engine.BatchItem, b)
	logits := make([][]float32, b)
	perPass := max(1, l.MaxBatch()/pp)
	run := func() (ppDur, tgDur time.Duration, err error) {
		for i, s := range sessions {
			s.Reset()
			items[i] = engine.BatchItem{Session: s, Tokens: ids(pp)}
		}
		start := time.Now()
		if err := prefillBatch(ctx, l, items, logits, perPass); err != nil {
			return 0, 0, err
		}
		ppDur = time.Since(start)
		start = time.Now()
		for range tg {
			for i := range items {
				items[i].Tokens = []int32{engine.Argmax(logits[i])}
			}
			if err := l.Batch(ctx, items, logits); err != nil {
				return 0, 0, err
			}
		}
		return ppDur, time.Since(start), ctx.Err()
	}
	if _, _, err := run(); err != nil { // warm-up
		return BatchBenchRow{}, err
	}
	var ppRates, tgRates, steps []float64
	for range reps {
		p, g, err := run()
		if err != nil {
			return BatchBenchRow{}, err
		}
		ppRates = append(ppRates, float64(b*pp)/p.Seconds())
		tgRates = append(tgRates, float64(b*tg)/g.Seconds())
		steps = append(steps, g.Seconds()*1000/float64(tg))
	}
	row := BatchBenchRow{Batch: b}
	row.PPTPS, _ = meanSD(ppRates)
	row.TGTPS, row.TGSD = meanSD(tgRates)
	row.TPOTMs, _ = meanSD(steps)
	return row, nil
}

// prefillBatch runs the sequences' prompts, perPass sequences a pass, or
// one sequence in passes of MaxBatch tokens where a prompt is longer than
// one pass takes (`-p` past 512 at `--batch`).
func prefillBatch(ctx context.Context, l *engine.Loaded, items []engine.BatchItem, logits [][]float32, perPass int) error {
	most := l.MaxBatch()
	for lo := 0; lo < len(items); lo += perPass {
		hi := min(len(items), lo+perPass)
		if len(items[lo].Tokens) <= most {
			if err := l.Batch(ctx, items[lo:hi], logits[lo:hi]); err != nil {
				return err
			}
			continue
		}
		whole := items[lo].Tokens
		for c := 0; c < len(whole); c += most {
			part := []engine.BatchItem{{Session: items[lo].Session, Tokens: whole[c:min(len(whole), c+most)]}}
			if err := l.Batch(ctx, part, logits[lo:lo+1]); err != nil {
				return err
			}
		}
	}
	return nil
}

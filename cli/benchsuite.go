package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"stepthrough/engine"
	"stepthrough/engine/model"
	"stepthrough/engine/serve"
)

// SuiteRow is one model's figures in bench --suite: llama-bench's pp128,
// pp512 and tg64 (tokens per second, mean ± sd) and llama-batched-bench's
// aggregate decoding of 8 sequences (32 prompt tokens, 32 generated each).
type SuiteRow struct {
	Model    string  `json:"model"`
	MiB      float64 `json:"mib"`
	PP128    float64 `json:"pp128"`
	PP128SD  float64 `json:"pp128_sd"`
	PP512    float64 `json:"pp512"`
	PP512SD  float64 `json:"pp512_sd"`
	TG64     float64 `json:"tg64"`
	TG64SD   float64 `json:"tg64_sd"`
	Batch8   float64 `json:"batch8_tg"`   // generated tokens/s over the 8 sequences
	Batch8x  float64 `json:"batch8_gain"` // over one sequence's
	Backend  string  `json:"backend"`
	Threads  int     `json:"threads"`
	Hardware string  `json:"hardware"`
}

func benchSuite(ctx context.Context, env Env, paths []string, reps int, opt engine.Options, asJSON bool) error {
	if reps < 1 {
		return usageError{fmt.Errorf("-r must be at least 1")}
	}
	if err := checkBackend(opt.Backend); err != nil {
		return err
	}
	var rows []SuiteRow
	for _, path := range paths {
		row, err := suiteRow(ctx, path, reps, opt)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		rows = append(rows, row)
	}
	if asJSON {
		return json.NewEncoder(env.Stdout).Encode(rows)
	}
	fmt.Fprintf(env.Stdout, "hardware: %s\nbackend: %s, %d threads\n\n", rows[0].Hardware, rows[0].Backend, rows[0].Threads)
	fmt.Fprintln(env.Stdout, "| model | size | pp128 t/s | pp512 t/s | tg64 t/s | 8 sequences: tg t/s (gain over 1) |")
	fmt.Fprintln(env.Stdout, "|---|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(env.Stdout, "| %s | %.2f MiB | %.1f ± %.1f | %.1f ± %.1f | %.1f ± %.1f | %.1f (%.2f×) |\n", r.Model, r.MiB,
			r.PP128, r.PP128SD, r.PP512, r.PP512SD, r.TG64, r.TG64SD, r.Batch8, r.Batch8x)
	}
	return nil
}

// suiteRow measures one model file.
func suiteRow(ctx context.Context, path string, reps int, opt engine.Options) (SuiteRow, error) {
	m, err := model.Load(path)
	if err != nil {
		return SuiteRow{}, err
	}
	defer m.Close()
	opt.Context = min(m.Config.ContextLen, 512)
	if opt.Context < 512 {
		return SuiteRow{}, fmt.Errorf("the suite needs 512 positions; the model has %d", m.Config.ContextLen)
	}
	l, err := engine.Load(m, opt)
	if err != nil {
		return SuiteRow{}, err
	}
	defer l.Close()
	info := l.Backend()
	row := SuiteRow{Model: filepath.Base(path), MiB: float64(fileBytes(m)) / (1 << 20), Backend: info.Name, Threads: info.Threads, Hardware: serve.Hardware()}
	r, err := l.NewBackend(0)
	if err != nil {
		return row, err
	}
	defer r.Close()
	if row.PP128, row.PP128SD, row.TG64, row.TG64SD, err = measurePPTG(ctx, r, m, 128, 64, 0, reps); err != nil {
		return row, err
	}
	if row.PP512, row.PP512SD, _, _, err = measurePPTG(ctx, r, m, 512, 0, 0, reps); err != nil {
		return row, err
	}
	one, err := benchOneBatch(ctx, l, 1, 32, 32, reps)
	if err != nil {
		return row, err
	}
	eight, err := benchOneBatch(ctx, l, 8, 32, 32, reps)
	if err != nil {
		return row, err
	}
	row.Batch8, row.Batch8x = eight.TGTPS, eight.TGTPS/one.TGTPS
	return row, nil
}

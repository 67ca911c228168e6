package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"stepthrough/engine/quant"
	"stepthrough/engine/quantize"
)

// runQuantize writes a model with its weights in fewer bits.
func runQuantize(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "quantize", "--model IN --out OUT --type T [--allow-requantize] [--quiet]")
	in := fs.String("model", "", "source model `file` (F32, F16 or BF16 weights)")
	out := fs.String("out", "", "output `file` (GGUF, the source's metadata kept)")
	typ := fs.String("type", "", "target: "+strings.Join(quantize.Targets, ", "))
	requant := fs.Bool("allow-requantize", false, "convert weights that are already quantized (their errors add up)")
	quiet := fs.Bool("quiet", false, "no progress bar, no per-type summary")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := required("model", *in); err != nil {
		return err
	}
	if err := required("out", *out); err != nil {
		return err
	}
	target, err := quantize.ParseTarget(*typ)
	if err != nil {
		return usageError{err}
	}
	opt := quantize.Options{Target: target, AllowRequantize: *requant}
	if !*quiet {
		last := -1
		opt.Progress = func(done, total int64) {
			if pct := int(100 * done / max(1, total)); pct != last { // redrawn when the percentage moves
				last = pct
				progressBar(env, done, total)
			}
		}
	}
	rep, err := quantize.File(*in, *out, opt)
	if err != nil {
		return err
	}
	if *quiet {
		return nil
	}
	fmt.Fprintf(env.Stdout, "%s → %s (%s): %.2f MiB → %.2f MiB (%.1f%%)\n", *in, *out, target,
		float64(rep.BytesIn)/(1<<20), float64(rep.BytesOut)/(1<<20), 100*float64(rep.BytesOut)/float64(max(1, rep.BytesIn)))
	w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "type\ttensors\tparameters\tmean RMSE")
	counts := map[quant.Type][3]float64{}
	for _, t := range rep.Tensors {
		c := counts[t.To]
		counts[t.To] = [3]float64{c[0] + 1, c[1] + float64(t.Elements), c[2] + t.RMSE}
	}
	var order []quant.Type
	for t := range counts {
		order = append(order, t)
	}
	slices.Sort(order)
	for _, t := range order {
		c := counts[t]
		fmt.Fprintf(w, "%s\t%d\t%d\t%.3g\n", t, int(c[0]), int64(c[1]), c[2]/c[0])
	}
	return w.Flush()
}

// progressBar draws a one-line bar on stderr (redrawn in place).
func progressBar(env Env, done, total int64) {
	const width = 30
	frac := float64(done) / float64(max(1, total))
	n := int(frac * width)
	fmt.Fprintf(env.Stderr, "\r[%s%s] %3.0f%% %.1f/%.1f MiB", strings.Repeat("#", n), strings.Repeat(".", width-n), 100*frac,
		float64(done)/(1<<20), float64(total)/(1<<20))
	if done >= total {
		fmt.Fprintln(env.Stderr)
	}
}

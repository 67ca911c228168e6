package present

import (
	"fmt"
	"slices"
	"strings"

	"stepthrough/engine/serve"
	"stepthrough/views"
)

// Repeated runs of a load: every setting run several times, alternating,
// each figure shown as its median with the lowest and highest run, and a
// verdict that names a difference only when it is larger than that
// spread, and says why a result goes against the lesson when it does.

// spread is a figure over repeated runs.
type spread struct{ med, lo, hi float64 }

func spreadOf(vals []float64) spread {
	s := slices.Clone(vals)
	slices.Sort(s)
	return spread{med: s[len(s)/2], lo: s[0], hi: s[len(s)-1]}
}

// overlaps reports ranges that share a value: the runs cannot tell the two
// settings apart.
func (a spread) overlaps(b spread) bool { return a.lo <= b.hi && b.lo <= a.hi }

func (a spread) text(format string) string {
	return fmt.Sprintf(format+" ("+format+"–"+format+")", a.med, a.lo, a.hi)
}

// figure reads one figure of a summary.
type figure struct {
	name, format string
	of           func(serve.Summary) float64
}

var repeatFigures = []figure{
	{"generated tokens per second (all users)", "%.0f", func(s serve.Summary) float64 { return s.TokensPerSecond }},
	{"time to first token, p95 (ms)", "%.1f", func(s serve.Summary) float64 { return ms(s.TTFT.P95) }},
	{"waiting in the queue, p95 (ms)", "%.1f", func(s serve.Summary) float64 { return ms(s.Queued.P95) }},
	{"time per output token, p50 (ms)", "%.2f", func(s serve.Summary) float64 { return ms(s.TPOT.P50) }},
	{"prompt tokens computed", "%.0f", func(s serve.Summary) float64 { return float64(s.PrefillTokens) }},
	{"prompt tokens read from the prefix cache", "%.0f", func(s serve.Summary) float64 { return float64(s.CachedTokens) }},
}

// ServingRepeats is the table of every setting's figures over its runs
// (runs[k] are setting k's reports, in the order they ran).
func ServingRepeats(names []string, runs [][]*serve.Report) views.ServingRepeats {
	r := views.ServingRepeats{Settings: names}
	if len(runs) == 0 || len(runs[0]) == 0 {
		return r
	}
	r.Runs = len(runs[0])
	for _, f := range repeatFigures {
		row := views.RepeatRow{Name: f.name}
		for _, reps := range runs {
			row.Values = append(row.Values, spreadOf(values(reps, f)).text(f.format))
		}
		r.Rows = append(r.Rows, row)
	}
	return r
}

func values(reps []*serve.Report, f figure) []float64 {
	var v []float64
	for _, rep := range reps {
		v = append(v, f.of(rep.Summary))
	}
	return v
}

// ServingVerdict says what two settings' repeated runs show: each figure
// that differs by more than the runs' spread, and, when static batching
// generated at least as fast as continuous batching, the measured reason.
func ServingVerdict(names []string, runs [][]*serve.Report) string {
	if len(runs) != 2 || len(runs[0]) == 0 || len(runs[1]) == 0 {
		return ""
	}
	var said []string
	for _, f := range repeatFigures[:3] {
		a, b := spreadOf(values(runs[0], f)), spreadOf(values(runs[1], f))
		if a.overlaps(b) {
			said = append(said, fmt.Sprintf("%s: %s against %s, within the runs' spread, so no difference is shown", f.name, fmt.Sprintf(f.format, a.med), fmt.Sprintf(f.format, b.med)))
			continue
		}
		said = append(said, fmt.Sprintf("%s: %s under %s against %s under %s", f.name, fmt.Sprintf(f.format, a.med), names[0], fmt.Sprintf(f.format, b.med), names[1]))
	}
	text := fmt.Sprintf("Over %d runs of each setting, alternating (medians): %s.", len(runs[0]), strings.Join(said, "; "))
	if why := againstTheLesson(names, runs); why != "" {
		text += " " + why
	}
	return text
}

// againstTheLesson explains, from the measurements, a static batch that
// generated faster than a continuous one, beyond the runs' spread.
func againstTheLesson(names []string, runs [][]*serve.Report) string {
	cont, stat := -1, -1
	for k, rs := range runs {
		switch rs[0].Options.Policy {
		case serve.Continuous:
			cont = k
		case serve.Static:
			stat = k
		}
	}
	if cont < 0 || stat < 0 {
		return ""
	}
	tps := repeatFigures[0]
	c, s := spreadOf(values(runs[cont], tps)), spreadOf(values(runs[stat], tps))
	if c.med > s.med || c.overlaps(s) { // continuous ahead, or no difference the runs can show
		return ""
	}
	rep := runs[cont][0]
	lo, hi := replyRange(rep)
	if lo == hi {
		return fmt.Sprintf("Why static batching kept up: every reply had the same length (%d tokens), so a static batch never waited on one long reply while its other places sat empty, and there was nothing for continuous batching to fill.", lo)
	}
	fixed, perToken := stepCost(rep.Steps)
	if perToken > 0 && fixed < perToken*rep.Summary.MeanBatch {
		return fmt.Sprintf("Why static batching kept up: on this model and machine a step's time grows by %.3f ms with every token in it and has only %.3f ms of fixed cost (fitted to %d measured steps), so running more requests in a step saves little; and continuous batching reads newcomers' prompts inside decode steps (their prompt chunks share the step), which lengthens the running users' tokens. Continuous batching pays where a step's cost is mostly reading the weights once: larger models, memory-bound decode. Its measured gain here is in the wait (the queue and time-to-first-token rows).",
			perToken, fixed, len(rep.Steps))
	}
	return fmt.Sprintf("Static batching generated at least as fast here. Measured: replies ran %d to %d tokens; a step cost %.3f ms plus %.3f ms per token in it; continuous batching ran %.1f requests per step over %d steps, static %.1f over %d.",
		lo, hi, fixed, perToken, rep.Summary.MeanBatch, rep.Summary.Steps, runs[stat][0].Summary.MeanBatch, runs[stat][0].Summary.Steps)
}

// replyRange is the shortest and longest reply of a run.
func replyRange(rep *serve.Report) (lo, hi int) {
	for i, t := range rep.Requests {
		if i == 0 || t.Generated < lo {
			lo = t.Generated
		}
		hi = max(hi, t.Generated)
	}
	return lo, hi
}

// stepCost fits a step's duration to a + b × its tokens (least squares):
// the fixed cost a and the cost per token b, in ms.
func stepCost(steps []serve.Step) (a, b float64) {
	var n, sx, sy, sxx, sxy float64
	for _, st := range steps {
		x, y := float64(st.Tokens()), ms(st.Dur)
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	d := n*sxx - sx*sx
	if n < 2 || d == 0 {
		return 0, 0
	}
	b = (n*sxy - sx*sy) / d
	return (sy - b*sx) / n, b
}

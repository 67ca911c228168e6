package serve

import (
	"context"
	"fmt"
	"slices"
	"time"

	"stepthrough/engine"
)

// SweepPoint is the measured prefill time of one prompt length (the
// median of Reps runs after a warm-up).
type SweepPoint struct {
	Tokens  int           `json:"tokens"`
	Prefill time.Duration `json:"prefill_ns"`
}

// Sweep is prefill time measured against prompt length, with the
// least-squares line through it: time ≈ Intercept + Slope × tokens.
type Sweep struct {
	Points    []SweepPoint  `json:"points"`
	Slope     time.Duration `json:"slope_ns_per_token"`
	Intercept time.Duration `json:"intercept_ns"`
	R2        float64       `json:"r2"`
}

// SweepLengths are the prompt lengths a sweep measures: powers of two
// from 8 up to at most limit.
func SweepLengths(limit int) []int {
	var out []int
	for n := 8; n <= limit; n *= 2 {
		out = append(out, n)
	}
	return out
}

// MeasureSweep times one prefill of each length on a fresh session of l
// (random tokens, BOS first), reps times after a warm-up, and fits the
// line.
func MeasureSweep(ctx context.Context, l *engine.Loaded, lengths []int, reps int) (Sweep, error) {
	var sw Sweep
	if len(lengths) < 2 || reps < 1 {
		return sw, fmt.Errorf("sweep: need at least two lengths and one run")
	}
	longest := slices.Max(lengths)
	sess, err := l.NewSession(longest)
	if err != nil {
		return sw, err
	}
	defer sess.Close()
	tok := l.Model.Tokenizer
	body := tok.EncodeIDs(" "+openings[0]+" "+openings[1]+" "+openings[2], false)
	prompt := tok.EncodeIDs("", true)
	for len(prompt) < longest {
		prompt = append(prompt, body...)
	}
	for _, n := range lengths {
		var runs []time.Duration
		for i := -1; i < reps; i++ { // run -1 is the warm-up
			sess.Reset()
			start := time.Now()
			if _, err := sess.Eval(ctx, prompt[:n]); err != nil {
				return sw, err
			}
			if i >= 0 {
				runs = append(runs, time.Since(start))
			}
		}
		slices.Sort(runs)
		sw.Points = append(sw.Points, SweepPoint{Tokens: n, Prefill: runs[len(runs)/2]})
	}
	sw.fit()
	return sw, nil
}

// fit is ordinary least squares of prefill time on tokens.
func (sw *Sweep) fit() {
	var sx, sy, sxx, sxy float64
	n := float64(len(sw.Points))
	for _, p := range sw.Points {
		x, y := float64(p.Tokens), float64(p.Prefill)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return
	}
	b := (n*sxy - sx*sy) / den
	a := (sy - b*sx) / n
	sw.Slope, sw.Intercept = time.Duration(b), time.Duration(a)
	var ssr, sst float64
	for _, p := range sw.Points {
		y := float64(p.Prefill)
		ssr += (y - a - b*float64(p.Tokens)) * (y - a - b*float64(p.Tokens))
		sst += (y - sy/n) * (y - sy/n)
	}
	if sst > 0 {
		sw.R2 = 1 - ssr/sst
	}
}

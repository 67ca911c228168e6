package present

import (
	"fmt"
	"slices"
	"time"

	"stepthrough/engine/serve"
	"stepthrough/views"
)

// The serving page's view models and pictures, drawn from measured data: where each
// user's time went, what each step held, and the latency every user saw.

const chartW = 640

func ServingResult(name string, rep *serve.Report, ctxLen, kvBytes int) views.ServingResult {
	s := rep.Summary
	res := views.ServingResult{Name: name, Figures: []views.Metric{
		{Name: "time to first token, p50 / p95", Value: fmt.Sprintf("%.1f / %.1f ms", ms(s.TTFT.P50), ms(s.TTFT.P95))},
		{Name: "time per output token, p50 / p95", Value: fmt.Sprintf("%.2f / %.2f ms", ms(s.TPOT.P50), ms(s.TPOT.P95))},
		{Name: "waiting in the queue, p50 / p95", Value: fmt.Sprintf("%.1f / %.1f ms", ms(s.Queued.P50), ms(s.Queued.P95))},
		{Name: "generated tokens per second (all users)", Value: fmt.Sprintf("%.1f", s.TokensPerSecond)},
		{Name: "requests, prompt tokens, generated tokens", Value: fmt.Sprintf("%d, %d, %d", s.Requests, s.PromptTokens, s.Generated)},
		{Name: "wall time, first arrival to last token", Value: fmt.Sprintf("%.2f s", s.Wall.Seconds())},
		{Name: "steps (time in prompt steps / decode-only steps)", Value: fmt.Sprintf("%d (%.2f s / %.2f s)", s.Steps, s.PrefillTime.Seconds(), s.DecodeTime.Seconds())},
		{Name: "requests per step, mean", Value: fmt.Sprintf("%.1f", s.MeanBatch)},
		{Name: "KV cache at its fullest: filled / held", Value: fmt.Sprintf("%d / %d positions = %s / %s", s.PeakKVUsed, s.PeakKVHeld, mibText(s.PeakKVUsed*kvBytes), mibText(s.PeakKVHeld*kvBytes))},
		{Name: "the same users in contiguous caches sized for the full context", Value: fmt.Sprintf("%d × %d positions = %s", s.PeakRunning, ctxLen, mibText(s.PeakRunning*ctxLen*kvBytes))},
		{Name: "preemptions (KV blocks ran out)", Value: fmt.Sprint(s.Preemptions)},
	}}
	res.Timeline = timelineChart(rep)
	res.Steps = stepsChart(rep)
	res.Latency = latencyChart(rep)
	return res
}

func mibText(b int) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// span is the time axis of a run: its first arrival to its last finish.
func span(rep *serve.Report) (time.Time, time.Duration) {
	var t0, t1 time.Time
	for _, t := range rep.Requests {
		if t0.IsZero() || t.Arrived.Before(t0) {
			t0 = t.Arrived
		}
		if t.Finished.After(t1) {
			t1 = t.Finished
		}
	}
	return t0, max(t1.Sub(t0), time.Millisecond)
}

// timelineChart is one row per user: queued (arrival → admitted), reading
// its prompt (→ first token), generating (→ last token).
func timelineChart(rep *serve.Report) views.Chart {
	reqs := slices.Clone(rep.Requests)
	slices.SortFunc(reqs, func(a, b serve.Times) int { return a.ID - b.ID })
	row := 10.0
	if len(reqs) > 32 {
		row = 6
	}
	left, top := 60.0, 8.0
	c := views.Chart{W: chartW, H: int(top + row*float64(len(reqs)) + 30), Title: "Each user's time: waiting (grey), reading its prompt (blue), generating (green)"}
	t0, total := span(rep)
	x := func(t time.Time) float64 { return left + float64(t.Sub(t0))/float64(total)*(chartW-left-10) }
	for i, t := range reqs {
		y := top + row*float64(i)
		bars := []struct {
			from, to    time.Time
			class, what string
		}{{t.Arrived, t.Admitted, "bar-queued", "waiting"}, {t.Admitted, t.FirstToken, "bar-prefill", "prompt"}, {t.FirstToken, t.Finished, "bar-decode", "generating"}}
		for _, b := range bars {
			w := max(x(b.to)-x(b.from), 0.5)
			c.Rects = append(c.Rects, views.ChartRect{X: x(b.from), Y: y, W: w, H: row - 1, Class: b.class,
				Tip: fmt.Sprintf("user %d %s: %.1f ms", t.ID, b.what, ms(b.to.Sub(b.from)))})
		}
		if len(reqs) <= 32 || i%8 == 0 {
			c.Labels = append(c.Labels, views.ChartLabel{X: left - 4, Y: y + row - 2, Text: fmt.Sprintf("user %d", t.ID), Anchor: "end", Class: "chart-small"})
		}
	}
	axis(&c, left, float64(c.H)-20, total)
	return c
}

// stepsChart draws each step at its time, as tall as its tokens: prompt
// tokens blue, decode tokens green.
func stepsChart(rep *serve.Report) views.Chart {
	left, h := 60.0, 110.0
	c := views.Chart{W: chartW, H: int(h + 30), Title: "Each step (one batched forward pass) at its time: prompt tokens (blue) and decode tokens (green) in it"}
	if len(rep.Steps) == 0 {
		return c
	}
	first := rep.Steps[0].At
	last := rep.Steps[len(rep.Steps)-1]
	total := max(last.At+last.Dur-first, time.Millisecond)
	most := 1
	for _, st := range rep.Steps {
		most = max(most, st.Tokens())
	}
	x := func(d time.Duration) float64 { return left + float64(d-first)/float64(total)*(chartW-left-10) }
	for _, st := range rep.Steps {
		pre, dec := 0, 0
		for _, p := range st.Parts {
			if p.Prefill {
				pre += p.Tokens
			} else {
				dec += p.Tokens
			}
		}
		w := max(x(st.At+st.Dur)-x(st.At), 0.5)
		hd := h * float64(dec) / float64(most)
		hp := h * float64(pre) / float64(most)
		tip := fmt.Sprintf("step %d: %d decode + %d prompt tokens, %.2f ms", st.Index, dec, pre, ms(st.Dur))
		c.Rects = append(c.Rects, views.ChartRect{X: x(st.At), Y: 8 + h - hd, W: w, H: hd, Class: "bar-decode", Tip: tip},
			views.ChartRect{X: x(st.At), Y: 8 + h - hd - hp, W: w, H: hp, Class: "bar-prefill", Tip: tip})
	}
	c.Labels = append(c.Labels, views.ChartLabel{X: left - 4, Y: 16, Text: fmt.Sprintf("%d tokens", most), Anchor: "end", Class: "chart-small"},
		views.ChartLabel{X: left - 4, Y: 8 + h, Text: "0", Anchor: "end", Class: "chart-small"})
	axis(&c, left, 8+h+4, total)
	return c
}

// latencyChart puts every user's TTFT (x) against its TPOT (y).
func latencyChart(rep *serve.Report) views.Chart {
	left, top, w, h := 60.0, 10.0, float64(chartW)-80, 150.0
	c := views.Chart{W: chartW, H: int(top + h + 34), Title: "Every user: time to first token (across) and time per output token (up)"}
	var maxT, maxP time.Duration
	for _, t := range rep.Requests {
		maxT, maxP = max(maxT, t.TTFT()), max(maxP, t.TPOT())
	}
	maxT, maxP = max(maxT, time.Millisecond), max(maxP, time.Millisecond/10)
	c.Lines = append(c.Lines, views.ChartLine{X1: left, Y1: top + h, X2: left + w, Y2: top + h, Class: "axis"}, views.ChartLine{X1: left, Y1: top, X2: left, Y2: top + h, Class: "axis"})
	for _, t := range rep.Requests {
		x := left + float64(t.TTFT())/float64(maxT)*w
		y := top + h - float64(t.TPOT())/float64(maxP)*h
		c.Rects = append(c.Rects, views.ChartRect{X: x - 3, Y: y - 3, W: 6, H: 6, Class: "dot",
			Tip: fmt.Sprintf("user %d: TTFT %.1f ms, TPOT %.2f ms", t.ID, ms(t.TTFT()), ms(t.TPOT()))})
	}
	c.Labels = append(c.Labels, views.ChartLabel{X: left + w, Y: top + h + 16, Text: fmt.Sprintf("TTFT %.1f ms", ms(maxT)), Anchor: "end", Class: "chart-small"},
		views.ChartLabel{X: left - 4, Y: top + 8, Text: fmt.Sprintf("%.2f ms", ms(maxP)), Anchor: "end", Class: "chart-small"},
		views.ChartLabel{X: left - 4, Y: top + h, Text: "0", Anchor: "end", Class: "chart-small"})
	return c
}

// axis draws a time axis at y from 0 to total.
func axis(c *views.Chart, left, y float64, total time.Duration) {
	right := float64(chartW) - 10
	c.Lines = append(c.Lines, views.ChartLine{X1: left, Y1: y, X2: right, Y2: y, Class: "axis"})
	for i := 0; i <= 4; i++ {
		x := left + float64(i)/4*(right-left)
		c.Lines = append(c.Lines, views.ChartLine{X1: x, Y1: y, X2: x, Y2: y + 4, Class: "axis"})
		c.Labels = append(c.Labels, views.ChartLabel{X: x, Y: y + 15, Text: fmt.Sprintf("%.0f ms", ms(total)*float64(i)/4), Anchor: "middle", Class: "chart-small"})
	}
}

// SweepView is the prompt-length sweep drawn: the points measured and
// the fitted line.
func SweepView(model, backend string, sw serve.Sweep) *views.ServingSweep {
	v := &views.ServingSweep{Model: model,
		Measured: fmt.Sprintf("Measured now on %s (%s): one prompt of each length read from an empty cache, the median of 3 runs after a warm-up.", serve.Hardware(), backend),
		Fit: fmt.Sprintf("Least-squares line: prefill ≈ %.3f ms + %.4f ms × prompt tokens (R² = %.3f). Every prompt token is a row through every weight matrix, so the time grows with the prompt; attention over the prompt grows faster still, which shows at long prompts.",
			ms(sw.Intercept), ms(sw.Slope), sw.R2)}
	v.Slope = fmt.Sprintf("%.4f", ms(sw.Slope))
	left, top, w, h := 60.0, 10.0, float64(chartW)-80, 180.0
	c := views.Chart{W: chartW, H: int(top + h + 34), Title: "Prefill time (up) against prompt tokens (across), with the fitted line"}
	last := sw.Points[len(sw.Points)-1]
	maxY := last.Prefill
	for _, pt := range sw.Points {
		maxY = max(maxY, pt.Prefill)
	}
	X := func(n float64) float64 { return left + n/float64(last.Tokens)*w }
	Y := func(d float64) float64 { return top + h - d/float64(maxY)*h }
	c.Lines = append(c.Lines, views.ChartLine{X1: left, Y1: top + h, X2: left + w, Y2: top + h, Class: "axis"}, views.ChartLine{X1: left, Y1: top, X2: left, Y2: top + h, Class: "axis"},
		views.ChartLine{X1: X(0), Y1: Y(float64(sw.Intercept)), X2: X(float64(last.Tokens)), Y2: Y(float64(sw.Intercept) + float64(sw.Slope)*float64(last.Tokens)), Class: "fit"})
	for _, pt := range sw.Points {
		c.Rects = append(c.Rects, views.ChartRect{X: X(float64(pt.Tokens)) - 3, Y: Y(float64(pt.Prefill)) - 3, W: 6, H: 6, Class: "dot",
			Tip: fmt.Sprintf("%d tokens: %.3f ms", pt.Tokens, ms(pt.Prefill))})
		v.Points = append(v.Points, views.Metric{Name: fmt.Sprint(pt.Tokens), Value: fmt.Sprintf("%.3f ms", ms(pt.Prefill))})
	}
	c.Labels = append(c.Labels, views.ChartLabel{X: left + w, Y: top + h + 16, Text: fmt.Sprintf("%d tokens", last.Tokens), Anchor: "end", Class: "chart-small"},
		views.ChartLabel{X: left - 4, Y: top + 8, Text: fmt.Sprintf("%.2f ms", ms(maxY)), Anchor: "end", Class: "chart-small"},
		views.ChartLabel{X: left - 4, Y: top + h, Text: "0", Anchor: "end", Class: "chart-small"})
	v.Chart = c
	return v
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

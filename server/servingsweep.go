package server

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"stepthrough/engine/serve"
	"stepthrough/views"
)

// servingSweepLimit is the longest prompt the sweep measures.
const servingSweepLimit = 512

// servingSweepPage measures prefill time against prompt length on a
// model now and draws the points with their least-squares line.
func (s *Server) servingSweepPage(c echo.Context) error {
	model := c.QueryParam("model")
	if model == "" {
		model = s.reg.Default()
	}
	form := defaultServingForm(model)
	p := s.servingBase(form)
	if !slices.Contains(s.reg.Names(), model) {
		p.Error = fmt.Sprintf("model %q: not one of the models here", truncate(model, 60))
		return renderPageStatus(c, http.StatusBadRequest, views.ServingPageView(p))
	}
	lm, err := s.reg.Engine(model, "auto")
	if err != nil {
		p.Error = err.Error()
		return renderPageStatus(c, http.StatusBadRequest, views.ServingPageView(p))
	}
	var sw serve.Sweep
	err = s.withWork(c, func() error {
		var err error
		sw, err = serve.MeasureSweep(c.Request().Context(), lm, serve.SweepLengths(min(servingSweepLimit, lm.Context())), 3)
		return err
	})
	if err != nil {
		p.Error = "the sweep failed: " + err.Error()
		return renderPageStatus(c, http.StatusServiceUnavailable, views.ServingPageView(p))
	}
	p.Sweep = sweepView(model, lm.Backend().String(), sw)
	return renderPage(c, views.ServingPageView(p))
}

func sweepView(model, backend string, sw serve.Sweep) *views.ServingSweep {
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

package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"stepthrough/engine/serve"
	"stepthrough/present"
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
	form := present.DefaultServingForm(model)
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
	err = s.withWork(c, func(ctx context.Context) error {
		var err error
		sw, err = serve.MeasureSweep(ctx, lm, serve.SweepLengths(min(servingSweepLimit, lm.Context())), 3)
		return err
	})
	if err != nil {
		p.Error = "the sweep failed: " + err.Error()
		return renderPageStatus(c, http.StatusServiceUnavailable, views.ServingPageView(p))
	}
	p.Sweep = present.SweepView(model, lm.Backend().String(), sw)
	return renderPage(c, views.ServingPageView(p))
}

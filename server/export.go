package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"stepthrough/present"
	"stepthrough/session"
	"stepthrough/spec"
	"stepthrough/views"
)

// exportSVG draws one stage as a standalone SVG for handouts. The query is
// an Explorer URL's (settings, seed, step, stage, head); the engine runs
// it again in a scratch session, so the drawing shows the engine's numbers
// for exactly that view.
func (s *Server) exportSVG(c echo.Context) error {
	q := c.QueryParams()
	if q.Get("prompt") == "" {
		return c.String(http.StatusBadRequest, "export needs an Explorer view: ?prompt=…&seed=…&token=…&stage=…")
	}
	run, err := spec.FromQuery(q, spec.Default(s.reg.Default()))
	if err != nil {
		return c.String(http.StatusBadRequest, err.Error())
	}
	se := session.New("export", "", s.reg)
	defer se.Close()
	if err := s.withWork(c, func(ctx context.Context) error { return se.Open(ctx, run) }); err != nil {
		if he, ok := err.(*echo.HTTPError); ok {
			return he
		}
		return c.String(http.StatusBadRequest, err.Error())
	}
	e := present.Explorer(se)
	if e.Notice != "" {
		return c.String(http.StatusNotFound, e.Notice)
	}
	x := present.StageExport(run, e)
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`inline; filename="stepthrough-step%d-stage%d.svg"`, e.Step+1, e.Current.Index+1))
	return c.Blob(http.StatusOK, "image/svg+xml", views.StageSVG(x))
}

package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

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
	form := present.Form(run)
	x := views.StageExport{Current: e.Current, Panel: e.Panel,
		Title: fmt.Sprintf("%s — token step %d of %d", present.Title(e.Current), e.Step+1, e.Steps),
		Caption: []string{
			"Prompt: " + strconv.Quote(run.Prompt),
			fmt.Sprintf("Model %s · temperature %s · top-k %s · top-p %s · min-p %s · order %s · seed %s", run.Model, form.Temperature, form.TopK, form.TopP, form.MinP, form.Order, e.Seed),
			"Generated so far: " + generatedText(e.Generated),
		}}
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`inline; filename="stepthrough-step%d-stage%d.svg"`, e.Step+1, e.Current.Index+1))
	return c.Blob(http.StatusOK, "image/svg+xml", views.StageSVG(x))
}

func generatedText(gs []views.GenToken) string {
	var b []byte
	for _, g := range gs {
		b = append(b, g.Bytes...)
	}
	return strconv.Quote(string(b))
}

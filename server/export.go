package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"stepthrough/views"
)

// exportSVG draws one stage as a standalone SVG for handouts. The query is
// an Explorer URL's (settings, seed, step, stage, head); the engine runs
// it again in a scratch session, so the drawing shows the engine's numbers
// for exactly that view.
func (s *Server) exportSVG(c echo.Context) error {
	q := c.QueryParams()
	if q.Get("prompt") == "" {
		return c.String(http.StatusBadRequest, "export needs an Explorer view: ?prompt=…&seed=…&step=…&stage=…")
	}
	se := newSession("export", "", s.reg)
	defer se.close()
	se.open(c.Request().Context(), getter(q))
	if se.err != "" {
		return c.String(http.StatusBadRequest, se.err)
	}
	if se.notice != "" {
		return c.String(http.StatusNotFound, se.notice)
	}
	set := se.settings
	e := se.explorer()
	x := views.StageExport{Current: e.Current, Panel: e.Panel,
		Title: fmt.Sprintf("%s — token step %d of %d", stageTitle(e.Current), e.Step+1, e.Steps),
		Caption: []string{
			"Prompt: " + strconv.Quote(set.Prompt),
			fmt.Sprintf("Model %s · temperature %s · top-k %s · top-p %s · min-p %s · order %s · seed %s", set.Model, set.Temperature, set.TopK, set.TopP, set.MinP, set.Order, e.Seed),
			"Generated so far: " + generatedText(e.Generated),
		}}
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`inline; filename="stepthrough-step%d-stage%d.svg"`, e.Step+1, e.Current.Index+1))
	return c.Blob(http.StatusOK, "image/svg+xml", views.StageSVG(x))
}

func stageTitle(st views.Stage) string {
	switch st.Name {
	case "attention":
		return fmt.Sprintf("Attention, layer %d", st.Layer+1)
	case "mlp":
		return fmt.Sprintf("MLP, layer %d", st.Layer+1)
	case "sampler":
		return fmt.Sprintf("Sampler step %d", st.SamplerStep+1)
	case "kv":
		return "KV cache append"
	case "softmax":
		return "Softmax"
	}
	return st.Label
}

func generatedText(gs []views.GenToken) string {
	var b []byte
	for _, g := range gs {
		b = append(b, g.Bytes...)
	}
	return strconv.Quote(string(b))
}

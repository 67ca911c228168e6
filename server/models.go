package server

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"stepthrough/hfhub"
	"stepthrough/present"
	"stepthrough/views"
	"stepthrough/wsconn"
)

// The Models page (/models): the models offered, where each came from
// and what it needs; pulling one from the Hugging Face Hub into its
// cache (package hfhub), following the pull, cancelling it, deleting a
// pulled model. Pulls and deletes ask for the API key when the server
// has one, and come from this server's own pages only.

func (s *Server) modelsRoutes(e *echo.Echo) {
	e.GET("/models", s.modelsPage)
	e.POST("/models/pull", s.startPull)
	e.GET("/models/pull/status", s.pullStatus)
	e.POST("/models/pull/cancel", s.cancelPull)
	e.POST("/models/delete", s.deleteModel)
}

func (s *Server) modelsPage(c echo.Context) error {
	p := s.modelsBase(c)
	if ref := c.QueryParam("ref"); ref != "" {
		p.Ref = truncate(ref, 200)
		if pl, ok := s.pulls.get(ref); ok {
			st := pl.status()
			p.Pull = &st
		}
	}
	p.Notice = truncate(c.QueryParam("notice"), 300)
	return renderPage(c, views.ModelsPageView(p))
}

// modelsBase is the page without a pull or a message.
// offerCached offers the Hugging Face cache's models that came since the
// server started (pulled from the command line beside it): the Models
// page and the API's model list look before they answer.
func (s *Server) offerCached(c echo.Context) {
	if s.cfg.Hub == nil {
		return
	}
	ms, err := s.cfg.Hub.Cache.Models()
	if err != nil {
		s.reqLog(c).Warn("reading the Hugging Face cache", "err", err)
		return
	}
	for _, m := range ms {
		s.reg.AddFile(m.Name, m.Path) // those offered already stay as they are
	}
}

func (s *Server) modelsBase(c echo.Context) views.ModelsPage {
	s.offerCached(c)
	var cache string
	var mem uint64
	if s.cfg.Hub != nil {
		cache = s.cfg.Hub.Cache.Dir
		mem, _ = hfhub.TotalMemory()
	}
	return present.ModelsPage(s.modelRows(), s.cfg.Hub != nil, cache, mem, !s.keyOK(c))
}

// modelsFail answers a refused pull, cancel or delete: the fragment's
// words for htmx, else the page with the error.
func (s *Server) modelsFail(c echo.Context, status int, msg string) error {
	if c.Request().Header.Get("HX-Request") == "true" {
		c.Response().Header().Set("HX-Reswap", "innerHTML")
		return c.HTML(status, `<p class="error" role="alert" data-testid="error">`+html.EscapeString(msg)+`</p>`)
	}
	p := s.modelsBase(c)
	p.Error, p.Ref = msg, truncate(c.FormValue("ref"), 200)
	return renderPageStatus(c, status, views.ModelsPageView(p))
}

// allowedChange checks a pull, cancel or delete: from this server's own
// page, with the key when one is set, with a Hub to pull from.
func (s *Server) allowedChange(c echo.Context) (int, string) {
	switch {
	case !wsconn.SameOrigin(c.Request()):
		return http.StatusForbidden, "Models are pulled and deleted from this server's own page only (the request came from another website's page)."
	case !s.keyOK(c):
		return http.StatusUnauthorized, "This server asks for its API key before a pull or a delete: give it in the form on this page (or send it as Authorization: Bearer)."
	case s.cfg.Hub == nil:
		return http.StatusConflict, "This server was started without the Hugging Face cache: it pulls no models."
	}
	return 0, ""
}

func (s *Server) startPull(c echo.Context) error {
	if status, msg := s.allowedChange(c); status != 0 {
		return s.modelsFail(c, status, msg)
	}
	ref, err := hfhub.ParseRef(strings.TrimSpace(c.FormValue("ref")))
	if err != nil {
		return s.modelsFail(c, http.StatusBadRequest, err.Error())
	}
	mem, _ := hfhub.TotalMemory()
	p := s.pulls.start(s.cfg.Hub, ref, mem, func(r *hfhub.Result) {
		s.reg.AddFile(r.Name, r.Path)
		s.log.Info("pulled a model", "model", r.Name, "path", r.Path, "bytes", r.Size)
	})
	if c.Request().Header.Get("HX-Request") != "true" {
		return c.Redirect(http.StatusSeeOther, "/models?ref="+p.ref)
	}
	return renderPage(c, views.PullStatusView(p.status()))
}

func (s *Server) pullStatus(c echo.Context) error {
	p, ok := s.pulls.get(c.QueryParam("ref"))
	if !ok {
		return c.String(http.StatusNotFound, "no pull of that model on this server")
	}
	return renderPage(c, views.PullStatusFragment(p.status(), s.modelRows()))
}

func (s *Server) cancelPull(c echo.Context) error {
	if status, msg := s.allowedChange(c); status != 0 {
		return s.modelsFail(c, status, msg)
	}
	p, ok := s.pulls.get(c.FormValue("ref"))
	if !ok {
		return s.modelsFail(c, http.StatusNotFound, "No pull of that model is running.")
	}
	p.cancel()
	<-p.ended
	if c.Request().Header.Get("HX-Request") != "true" {
		return c.Redirect(http.StatusSeeOther, "/models?ref="+p.ref)
	}
	return renderPage(c, views.PullStatusView(p.status()))
}

func (s *Server) deleteModel(c echo.Context) error {
	if status, msg := s.allowedChange(c); status != 0 {
		return s.modelsFail(c, status, msg)
	}
	name := c.FormValue("name")
	ms, err := s.cfg.Hub.Cache.Models()
	if err != nil {
		return s.modelsFail(c, http.StatusInternalServerError, err.Error())
	}
	i := slices.IndexFunc(ms, func(m hfhub.Model) bool { return m.Name == name })
	if i < 0 {
		return s.modelsFail(c, http.StatusNotFound, fmt.Sprintf("%.120q is not a model in the Hugging Face cache: only pulled models are deleted here.", name))
	}
	if err := s.cfg.Hub.Cache.Remove(ms[i]); err != nil {
		s.reqLog(c).Error("deleting a model", "model", name, "err", err)
		return s.modelsFail(c, http.StatusInternalServerError, "Deleting "+name+" failed: "+err.Error())
	}
	s.reg.RemoveFile(name)
	s.reqLog(c).Info("deleted a model", "model", name)
	return c.Redirect(http.StatusSeeOther, "/models?notice="+url.QueryEscape("Deleted "+name+" from the Hugging Face cache."))
}

// modelRows describes every offered model from its header alone.
func (s *Server) modelRows() []views.ModelRow {
	var cache string
	if s.cfg.Hub != nil {
		cache = s.cfg.Hub.Cache.Dir
	}
	var files []present.ModelFile
	for _, name := range s.reg.Names() {
		f := present.ModelFile{Name: name}
		f.Path, f.Embedded, _ = s.reg.Path(name)
		f.Size, f.SizeKnown = s.reg.FileSize(name)
		f.Summary, f.Summarized = s.reg.Summary(name)
		files = append(files, f)
	}
	return present.ModelRows(files, cache)
}

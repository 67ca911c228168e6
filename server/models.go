package server

import (
	"cmp"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"stepthrough/engine/memcalc"
	"stepthrough/engine/model"
	"stepthrough/hfhub"
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
	p := views.ModelsPage{Rows: s.modelRows(), CanPull: s.cfg.Hub != nil, NeedKey: !s.keyOK(c)}
	if s.cfg.Hub != nil {
		p.Cache = s.cfg.Hub.Cache.Dir
		mem, _ := hfhub.TotalMemory()
		p.Memory = hfhub.Size(int64(mem))
		p.Suggestions = suggestions(mem)
	}
	return p
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

// memoryRunTokens is the run the Models page's memory column sizes the KV
// cache for: a long conversation, where a model's full context (40,960
// tokens for Qwen3) would ask for gigabytes no run here holds.
const memoryRunTokens = 4096

// thousands writes n with thousands separators.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// modelRows describes every offered model from its header alone.
func (s *Server) modelRows() []views.ModelRow {
	var cache string
	if s.cfg.Hub != nil {
		cache = s.cfg.Hub.Cache.Dir
	}
	var rows []views.ModelRow
	for _, name := range s.reg.Names() {
		r := views.ModelRow{Name: name, Family: "?", Params: "?", Type: "?", Size: "?", Memory: "?"}
		path, embedded, _ := s.reg.Path(name)
		var size int64
		switch {
		case embedded:
			r.Source, r.Where = "embedded", "compiled into the binary (a lesson's model)"
		case cache != "" && strings.HasPrefix(path, cache+string(filepath.Separator)):
			r.Source, r.Where, r.Deletable = "Hugging Face cache", path, true
		case strings.Contains(name, ":") || strings.Count(name, "/") > 0:
			r.Source, r.Where = "Hugging Face cache", path
		default:
			r.Source, r.Where = "models folder", path
		}
		if n, ok := s.reg.FileSize(name); ok {
			size = n
			r.Size = hfhub.Size(size)
		}
		if sm, ok := s.reg.Summary(name); ok {
			r.Family, r.Params, r.Type = cmp.Or(sm.Arch, "?"), model.HumanCount(sm.Params), sm.Type
			if sm.Context > 0 && sm.Layers > 0 && sm.KVHeads > 0 && sm.HeadDim > 0 {
				sh := memcalc.Shape{Name: name, Layers: sm.Layers, Heads: sm.KVHeads, KVHeads: sm.KVHeads, HeadDim: sm.HeadDim}
				kvAt := func(tokens int) int64 {
					return int64(memcalc.Find(memcalc.Calculate(sh, memcalc.Inputs{KVBytes: 4, Context: tokens, Batch: 1}), "KV cache per user").Value)
				}
				if size > 0 {
					run := min(sm.Context, memoryRunTokens)
					r.Memory = hfhub.Size(size + kvAt(run))
					r.MemoryWorking = fmt.Sprintf("%s of weights + %s of KV cache for %s tokens", hfhub.Size(size), hfhub.Size(kvAt(run)), thousands(run))
					if sm.Context > run {
						r.MemoryWorking += fmt.Sprintf("; %s at its full context of %s tokens", hfhub.Size(size+kvAt(sm.Context)), thousands(sm.Context))
					}
				}
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// suggestion is a small model to suggest, with its files' published
// sizes (Q8_0 and Q4_K_M), which Choose judges as a pull would.
type suggestion struct {
	repo, title string
	files       []hfhub.File
}

var suggested = []suggestion{
	{"bartowski/SmolLM2-135M-Instruct-GGUF", "SmolLM2 135M Instruct (Hugging Face)", []hfhub.File{{Name: "SmolLM2-135M-Instruct-Q8_0.gguf", Size: 145e6}, {Name: "SmolLM2-135M-Instruct-Q4_K_M.gguf", Size: 105e6}}},
	{"unsloth/gemma-3-270m-it-GGUF", "Gemma 3 270M instruct (Google)", []hfhub.File{{Name: "gemma-3-270m-it-Q8_0.gguf", Size: 292e6}, {Name: "gemma-3-270m-it-Q4_K_M.gguf", Size: 253e6}}},
	{"unsloth/Qwen3-0.6B-GGUF", "Qwen3 0.6B (Alibaba)", []hfhub.File{{Name: "Qwen3-0.6B-Q8_0.gguf", Size: 639e6}, {Name: "Qwen3-0.6B-Q4_K_M.gguf", Size: 397e6}}},
	{"bartowski/Llama-3.2-1B-Instruct-GGUF", "Llama 3.2 1B Instruct (Meta)", []hfhub.File{{Name: "Llama-3.2-1B-Instruct-Q8_0.gguf", Size: 1.32e9}, {Name: "Llama-3.2-1B-Instruct-Q4_K_M.gguf", Size: 808e6}}},
}

// suggestions are the suggested models with the quantization pull would
// take in mem bytes of memory; one that fits in none is left out.
func suggestions(mem uint64) []views.ModelSuggestion {
	var out []views.ModelSuggestion
	for _, sg := range suggested {
		ch, err := hfhub.Choose(sg.files, "", mem)
		if err != nil {
			continue
		}
		tag := strings.ToUpper(hfhub.Tag(ch.File.Name))
		out = append(out, views.ModelSuggestion{Ref: sg.repo + ":" + tag, Title: sg.title, Why: fmt.Sprintf("%s, %s", hfhub.Size(ch.File.Size), ch.Why)})
	}
	return out
}

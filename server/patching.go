package server

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"

	"github.com/labstack/echo/v4"

	"stepthrough/present"
	"stepthrough/spec"
	"stepthrough/views"
)

// maxPatchPrompt bounds each patching prompt (characters).
const maxPatchPrompt = 200

// patchingPage runs activation patching on two prompts: the clean one
// and a corrupted one of the same length (GET /patching).
func (s *Server) patchingPage(c echo.Context) error {
	qp := c.QueryParams()
	p := present.PatchingForm(s.reg.Names(), cmp.Or(qp.Get("model"), s.reg.Default()), qp.Get("clean"), qp.Get("corrupt"), maxPatchPrompt)
	fail := func(err error) error {
		var status int
		status, p.Error = workError(err)
		return renderPageStatus(c, status, views.PatchingPageView(p))
	}
	if !slices.Contains(p.Models, p.Model) {
		return fail(fmt.Errorf("model %q: not one of the models here", truncate(p.Model, 60)))
	}
	for _, text := range []string{p.Clean, p.Corrupt} {
		if err := spec.CheckPrompt(text); err != nil || len(text) > maxPatchPrompt {
			return fail(fmt.Errorf("each prompt is at most %d characters", maxPatchPrompt))
		}
	}
	r, err := s.patchGrid(c, p.Model, p.Clean, p.Corrupt)
	if err != nil {
		return fail(err)
	}
	p.Result = r
	return renderPage(c, views.PatchingPageView(p))
}

// patchGrid runs activation patching of model from the clean prompt into
// the corrupted one, within the work and memory budgets: the Patching
// page's grid, and a lesson step's (patch:).
func (s *Server) patchGrid(c echo.Context, model, cleanText, corruptText string) (*views.PatchView, error) {
	lm, err := s.reg.Engine(model, "cpu") // patching edits the pass: the CPU's
	if err != nil {
		return nil, err
	}
	tk := lm.Model.Tokenizer
	clean, corrupt := tk.EncodeIDs(cleanText, true), tk.EncodeIDs(corruptText, true)
	release, err := s.admitPatching(lm.Model, len(clean), len(corrupt))
	if err != nil {
		return nil, err
	}
	defer release()
	var v *views.PatchView
	err = s.withWork(c, func(ctx context.Context) error {
		r, err := lm.Patch(ctx, clean, corrupt)
		if err == nil {
			v = present.Patching(tk, r, clean, corrupt)
		}
		return err
	})
	return v, err
}

// patchingLink is the Patching page on a model and two prompts.
func patchingLink(model, clean, corrupt string) string {
	return "/patching?" + url.Values{"model": {model}, "clean": {clean}, "corrupt": {corrupt}}.Encode()
}

package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"stepthrough/present"
	"stepthrough/views"
)

// The families page: two offered models on one prompt, side by side.

const maxFamiliesPrompt = 500

func (s *Server) familiesPage(c echo.Context) error {
	qp := c.QueryParams()
	p := views.FamiliesPage{Models: s.reg.Names(), A: qp.Get("a"), B: qp.Get("b"), Prompt: qp.Get("prompt")}
	if p.A == "" {
		p.A = s.reg.Default()
	}
	if p.B == "" {
		p.B = s.otherFamily(p.Models, p.A)
	}
	if p.Prompt == "" {
		p.Prompt = "Once upon a time, there was a little"
	}
	if len(p.Prompt) > maxFamiliesPrompt {
		p.Error = fmt.Sprintf("the prompt is %d bytes; the limit is %d", len(p.Prompt), maxFamiliesPrompt)
		return renderPageStatus(c, http.StatusBadRequest, views.FamiliesPageView(p))
	}
	err := s.withWork(c, func(ctx context.Context) error {
		for _, name := range []string{p.A, p.B} {
			side, err := s.familySide(ctx, name, p.Prompt)
			if err != nil {
				return err
			}
			p.Sides = append(p.Sides, side)
		}
		return nil
	})
	if err != nil {
		p.Error, p.Sides = err.Error(), nil
		return renderPageStatus(c, http.StatusBadRequest, views.FamiliesPageView(p))
	}
	present.CompareFamilies(&p)
	return renderPage(c, views.FamiliesPageView(p))
}

// otherFamily is the first offered model of another family than a's,
// else the first other model (a itself when it is the only one).
func (s *Server) otherFamily(models []string, a string) string {
	sa, _ := s.reg.Summary(a)
	other := a
	for _, m := range models {
		if m == a {
			continue
		}
		if sm, ok := s.reg.Summary(m); ok && sm.Arch != sa.Arch {
			return m
		}
		if other == a {
			other = m
		}
	}
	return other
}

// familySide runs one forward pass of model name over the prompt.
func (s *Server) familySide(ctx context.Context, name, prompt string) (views.FamilySide, error) {
	l, err := s.reg.Engine(name, "auto")
	if err != nil {
		return views.FamilySide{}, err
	}
	m, tk := l.Model, l.Model.Tokenizer
	toks := tk.Encode(prompt, true)
	if len(toks) == 0 {
		return views.FamilySide{}, fmt.Errorf("%s: the prompt is empty after tokenizing", name)
	}
	if len(toks) > min(m.Config.ContextLen, 1024) {
		return views.FamilySide{}, fmt.Errorf("%s: the prompt is %d tokens, more than the model's context", name, len(toks))
	}
	se, err := l.NewSession(len(toks))
	if err != nil {
		return views.FamilySide{}, err
	}
	defer se.Close()
	ids := make([]int32, len(toks))
	for i, t := range toks {
		ids[i] = t.ID
	}
	logits, err := se.Eval(ctx, ids)
	if err != nil {
		return views.FamilySide{}, fmt.Errorf("%s: %w", name, err)
	}
	return present.FamilySide(m, present.FamilyRun{Model: name, Label: s.reg.Label(name), Backend: se.Backend().String(), Tokens: toks, Logits: logits}), nil
}

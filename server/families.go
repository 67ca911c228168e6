package server

import (
	"cmp"
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"stepthrough/engine/model"
	"stepthrough/present"
	"stepthrough/views"
)

// The families page: two offered models on one prompt, side by side.

const maxFamiliesPrompt = 500

func (s *Server) familiesPage(c echo.Context) error {
	qp := c.QueryParams()
	models, a, b := s.reg.Names(), cmp.Or(qp.Get("a"), s.reg.Default()), qp.Get("b")
	if b == "" {
		b = s.otherFamily(models, a)
	}
	p := present.FamiliesForm(models, a, b, qp.Get("prompt"))
	if len(p.Prompt) > maxFamiliesPrompt {
		p.Error = fmt.Sprintf("the prompt is %d bytes; the limit is %d", len(p.Prompt), maxFamiliesPrompt)
		return renderPageStatus(c, http.StatusBadRequest, views.FamiliesPageView(p))
	}
	err := s.withWork(c, func(ctx context.Context) error {
		for _, name := range []string{p.A, p.B} {
			m, run, err := s.familyRun(ctx, name, p.Prompt)
			if err != nil {
				return err
			}
			p.Sides = append(p.Sides, present.FamilySide(m, run))
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

// familyRun runs one forward pass of model name over the prompt.
func (s *Server) familyRun(ctx context.Context, name, prompt string) (*model.Model, present.FamilyRun, error) {
	l, err := s.reg.Engine(name, "auto")
	if err != nil {
		return nil, present.FamilyRun{}, err
	}
	m, tk := l.Model, l.Model.Tokenizer
	toks := tk.Encode(prompt, true)
	if len(toks) == 0 {
		return nil, present.FamilyRun{}, fmt.Errorf("%s: the prompt is empty after tokenizing", name)
	}
	if len(toks) > min(m.Config.ContextLen, 1024) {
		return nil, present.FamilyRun{}, fmt.Errorf("%s: the prompt is %d tokens, more than the model's context", name, len(toks))
	}
	se, err := l.NewSession(len(toks))
	if err != nil {
		return nil, present.FamilyRun{}, err
	}
	defer se.Close()
	ids := make([]int32, len(toks))
	for i, t := range toks {
		ids[i] = t.ID
	}
	logits, err := se.Eval(ctx, ids)
	if err != nil {
		return nil, present.FamilyRun{}, fmt.Errorf("%s: %w", name, err)
	}
	return m, present.FamilyRun{Model: name, Label: s.reg.Label(name), Backend: se.Backend().String(), Tokens: toks, Logits: logits}, nil
}

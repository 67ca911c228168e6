package server

import (
	"context"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"stepthrough/present"
	"stepthrough/session"
	"stepthrough/views"
)

func (s *Server) lessonList(c echo.Context) error {
	return renderPage(c, views.LessonListPage(views.LessonList{Lessons: present.LessonLinks(s.lessons)}))
}

// lessonStep plays one step of a lesson: the engine runs the step's prompt
// and settings, the page shows the narration, the question (with the
// engine's answer once the student has answered) and the stage's panel.
func (s *Server) lessonStep(c echo.Context) error {
	name := c.Param("name")
	l, ok := s.lessons[name]
	if !ok {
		return renderPageStatus(c, http.StatusNotFound, views.LessonNotFoundPage(truncate(name, 40)))
	}
	i := lessonStepIndex(c, len(l.Steps))
	st := l.Steps[i]
	se := session.New("lesson", "", s.reg)
	defer se.Close()
	play := present.LessonPlay{Lessons: s.lessons, Name: name, Step: i, Played: se}
	if ans, ok := c.QueryParams()["answer"]; ok && len(ans) > 0 {
		play.Answer = &ans[0]
	}
	play.Err = s.withWork(c, func(ctx context.Context) error { return se.PlayLesson(ctx, l, i) })
	p := present.LessonStep(play)
	if p.ExplorerURL != "" {
		p.TryOther = s.tryOther(st.Run.Model, p.ExplorerURL)
	}
	if play.Err == nil && st.Patch != "" && (p.Question == nil || p.Question.Answered) { // the grid, like the panel, waits for the answer
		var err error
		if p.Patching, err = s.patchGrid(c, st.Run.Model, st.Run.Prompt, st.Patch); err != nil {
			p.Error = err.Error()
		}
		p.PatchingURL = patchingLink(st.Run.Model, st.Run.Prompt, st.Patch)
	}
	return renderPage(c, views.LessonStepPage(p))
}

// lessonStepIndex is the step a request names: /lessons/NAME/N (from 1),
// or ?step= (from 0) in links made before; the first step when neither
// names one that exists.
func lessonStepIndex(c echo.Context, steps int) int {
	i, err := strconv.Atoi(c.QueryParam("step"))
	if n := c.Param("n"); n != "" {
		k, perr := strconv.Atoi(n)
		i, err = k-1, perr
	}
	if err != nil || i < 0 || i >= steps {
		return 0
	}
	return i
}

// tryOther is "Try this on another model" for a step whose Explorer link
// is explorer, on lesson model own: the link's fields but the model (a
// stage by name stays: the other model opens at the same stage, or at the
// start with a notice when it has no such layer), and the other models
// offered; nil when there is none.
func (s *Server) tryOther(own, explorer string) *views.TryOther {
	u, err := url.Parse(explorer)
	if err != nil {
		return nil
	}
	t := &views.TryOther{Model: own, Labels: map[string]string{}}
	for _, m := range s.reg.Names() {
		if m != own {
			t.Models = append(t.Models, m)
			t.Labels[m] = s.reg.Label(m)
		}
	}
	if len(t.Models) == 0 {
		return nil
	}
	q := u.Query()
	keys := slices.Sorted(maps.Keys(q))
	for _, k := range keys {
		if k == "model" {
			continue
		}
		for _, v := range q[k] {
			if k == "stage" && strings.Trim(v, "0123456789") == "" {
				continue // a stage by index counts the model's layers: another model's differs
			}
			t.Fields = append(t.Fields, [2]string{k, v})
		}
	}
	return t
}

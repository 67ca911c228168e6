package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"stepthrough/present"
	"stepthrough/session"
	"stepthrough/views"
)

func (s *Server) lessonList(c echo.Context) error {
	return renderPage(c, views.LessonListPage(present.LessonList(s.lessons)))
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
	i, ok := lessonStepIndex(c, len(l.Steps))
	if !ok {
		asked := c.Param("n")
		if asked == "" {
			asked = c.QueryParam("step")
		}
		return renderPageStatus(c, http.StatusNotFound, views.LessonStepNotFoundPage(name, l.Title, truncate(asked, 20), len(l.Steps)))
	}
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
		p.TryOther = present.TryOther(st.Run.Model, p.ExplorerURL, s.reg.Names(), s.reg.Label)
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
// names one; false when the one named is not a step of the lesson.
func lessonStepIndex(c echo.Context, steps int) (int, bool) {
	v, from := c.QueryParam("step"), 0
	if n := c.Param("n"); n != "" {
		v, from = n, 1
	}
	if v == "" {
		return 0, true
	}
	i, err := strconv.Atoi(v)
	i -= from
	if err != nil || i < 0 || i >= steps {
		return 0, false
	}
	return i, true
}

package server

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"stepthrough/classroom"
	"stepthrough/lessons"
	"stepthrough/present"
	"stepthrough/session"
	"stepthrough/views"
)

func (s *Server) lessonList(c echo.Context) error {
	var l views.LessonList
	for _, name := range lessons.Names(s.lessons) {
		x := s.lessons[name]
		l.Lessons = append(l.Lessons, views.LessonLink{Name: name, Title: x.Title, Summary: x.Summary, Level: x.Level, Duration: x.Duration, Steps: len(x.Steps)})
	}
	return renderPage(c, views.LessonListPage(l))
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
	p := views.LessonPage{Name: name, Title: l.Title, Step: i, Steps: len(l.Steps), StepTitle: st.Title}
	p.Narration = classroom.Paragraphs(st.Narration)
	link := func(k int) string { return lessonLink(name, k) }
	p.Self = link(i)
	if i > 0 {
		p.Prev = link(i - 1)
	}
	if i+1 < len(l.Steps) {
		p.Next = link(i + 1)
	} else {
		p.NextLesson, p.NextLessonTitle = s.nextLesson(name)
	}
	se := session.New("lesson", "", s.reg)
	defer se.Close()
	err := s.withWork(c, func(ctx context.Context) error { return se.PlayLesson(ctx, l, i) })
	if err != nil {
		p.Error = err.Error()
	} else {
		e := present.Explorer(se)
		p.Current, p.Panel, p.ExplorerURL = e.Current, e.Panel, e.URL
		p.Timing, p.BackendInfo, p.Generated, p.Notice = e.Timing, e.BackendInfo, e.Generated, e.Notice
		p.Edits = e.Edits
		if st.SetsBackend {
			p.BackendNote = se.Backend().Note
		}
		p.Highlight = present.Highlights(se.Tokenizer(), st)
		p.Question = question(c, se, st)
		if p.Question == nil || p.Question.Answered { // the text that explains the answer waits for it
			p.After = classroom.Paragraphs(st.After)
		}
		if q := p.Question; q != nil {
			p.SoFar = e.SoFar
			if !q.Answered && !st.PanelShown { // the engine's numbers would give the answer away
				p.Hidden, p.Panel, p.Generated, p.Edits = true, nil, nil, nil
			}
			if !q.Answered { // the Explorer shows the step's numbers, and the steps after it
				p.ExplorerURL = ""
			}
		}
		if p.ExplorerURL != "" {
			p.TryOther = s.tryOther(st.Run.Model, p.ExplorerURL)
		}
		if st.Patch != "" && (p.Question == nil || p.Question.Answered) { // the grid, like the panel, waits for the answer
			if p.Patching, err = s.patchGrid(c, st.Run.Model, st.Run.Prompt, st.Patch); err != nil {
				p.Error = err.Error()
			}
			p.PatchingURL = patchingLink(st.Run.Model, st.Run.Prompt, st.Patch)
		}
	}
	return renderPage(c, views.LessonStepPage(p))
}

// lessonLink is lesson step k's address: /lessons/NAME/N with N counted
// from 1, as the page numbers its steps.
func lessonLink(name string, k int) string { return fmt.Sprintf("/lessons/%s/%d", name, k+1) }

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

// question renders a step's question; after an answer, the engine reveals
// what it computed.
func question(c echo.Context, se *session.Session, st lessons.Step) *views.LessonQuestion {
	lq := st.Question
	if lq == nil {
		return nil
	}
	q := &views.LessonQuestion{Kind: lq.Kind, Text: lq.Text, Choices: lq.Choices}
	ans, answered := c.QueryParams()["answer"]
	if !answered || len(ans) == 0 {
		return q
	}
	q.Answered, q.Answer = true, ans[0]
	step, tk, ok := se.Current()
	if !ok {
		return q
	}
	var want string
	want, q.Reveal = lessons.EngineAnswer(step, tk, lq)
	q.Correct, q.Right = lessons.Judge(lq.Kind, want, q.Answer), want
	return q
}

// nextLesson is the lesson after name in the lessons' order (the
// suggested path, then the rest): its link and title; after the last
// one, the list of lessons.
func (s *Server) nextLesson(name string) (href, title string) {
	names := lessons.Names(s.lessons)
	for i, n := range names {
		if n == name && i+1 < len(names) {
			return "/lessons/" + names[i+1], s.lessons[names[i+1]].Title
		}
	}
	return "/lessons", ""
}

// tryOther is "Try this on another model" for a step whose Explorer link
// is explorer, on lesson model own: the link's fields but the model and
// the stage (whose index depends on the model's layers), and the other
// models offered; nil when there is none.
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
		if k == "model" || k == "stage" {
			continue
		}
		for _, v := range q[k] {
			t.Fields = append(t.Fields, [2]string{k, v})
		}
	}
	return t
}

package present

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"stepthrough/lessons"
	"stepthrough/session"
	"stepthrough/views"
)

// Paragraphs splits narration into paragraphs of single-spaced text.
func Paragraphs(text string) []string {
	var out []string
	for _, para := range strings.Split(text, "\n\n") {
		if para = strings.TrimSpace(para); para != "" {
			out = append(out, strings.Join(strings.Fields(para), " "))
		}
	}
	return out
}

// LessonLinks are the lessons' links in their order (the suggested path,
// then the rest).
func LessonLinks(ls map[string]*lessons.Lesson) []views.LessonLink {
	var out []views.LessonLink
	for _, name := range lessons.Names(ls) {
		x := ls[name]
		out = append(out, views.LessonLink{Name: name, Title: x.Title, Summary: x.Summary, Level: x.Level, Duration: x.Duration, Steps: len(x.Steps)})
	}
	return out
}

// LessonLink is lesson step k's address: /lessons/NAME/N with N counted
// from 1, as the page numbers its steps.
func LessonLink(name string, k int) string { return fmt.Sprintf("/lessons/%s/%d", name, k+1) }

// LessonPlay is one lesson step as a session played it.
type LessonPlay struct {
	Lessons map[string]*lessons.Lesson // every lesson, for the one after the last step
	Name    string
	Step    int
	Answer  *string          // the student's answer; nil before one
	Played  *session.Session // the session that played the step
	Err     error            // why the step could not be played
}

// LessonStep is a lesson step's page: the narration, the question (with
// the engine's answer once answered), the stage's panel unless it would
// give the answer away, and the links around it.
func LessonStep(in LessonPlay) views.LessonPage {
	l := in.Lessons[in.Name]
	i, st := in.Step, l.Steps[in.Step]
	p := views.LessonPage{Name: in.Name, Title: l.Title, Step: i, Steps: len(l.Steps), StepTitle: st.Title, Narration: Paragraphs(st.Narration), Self: LessonLink(in.Name, i)}
	if i > 0 {
		p.Prev = LessonLink(in.Name, i-1)
	}
	if i+1 < len(l.Steps) {
		p.Next = LessonLink(in.Name, i+1)
	} else {
		p.NextLesson, p.NextLessonTitle = nextLesson(in.Lessons, in.Name)
	}
	if in.Err != nil {
		p.Error = in.Err.Error()
		return p
	}
	se := in.Played
	e := Explorer(se)
	p.Current, p.Panel, p.ExplorerURL = e.Current, e.Panel, e.URL
	p.Timing, p.BackendInfo, p.Generated, p.Notice = e.Timing, e.BackendInfo, e.Generated, e.Notice
	p.Edits, p.Versus = e.Edits, e.Versus
	if st.SetsBackend {
		p.BackendNote = se.Backend().Note
	}
	p.Highlight = Highlights(se.Tokenizer(), st)
	p.Question = lessonQuestion(se, st, in.Answer)
	if p.Question == nil || p.Question.Answered { // the text that explains the answer waits for it
		p.After = Paragraphs(st.After)
	}
	if q := p.Question; q != nil {
		p.SoFar = e.SoFar
		if !q.Answered && !st.PanelShown { // the engine's numbers would give the answer away
			p.Hidden, p.Panel, p.Generated, p.Edits, p.Versus = true, nil, nil, nil, nil
		}
		if !q.Answered { // the Explorer shows the step's numbers, and the steps after it
			p.ExplorerURL = ""
		}
	}
	return p
}

// lessonQuestion is a step's question; after an answer, what the engine
// computed and whether the answer matches it.
func lessonQuestion(se *session.Session, st lessons.Step, answer *string) *views.LessonQuestion {
	lq := st.Question
	if lq == nil {
		return nil
	}
	q := &views.LessonQuestion{Kind: lq.Kind, Text: lq.Text, Choices: lq.Choices}
	if answer == nil {
		return q
	}
	q.Answered, q.Answer = true, *answer
	step, tk, ok := se.Current()
	if !ok {
		return q
	}
	var want string
	want, q.Reveal = lessons.EngineAnswer(step, tk, lq)
	q.Correct, q.Right = lessons.Judge(lq.Kind, want, q.Answer), want
	return q
}

// nextLesson is the lesson after name in the lessons' order: its link
// and title; after the last one, the list of lessons.
func nextLesson(ls map[string]*lessons.Lesson, name string) (href, title string) {
	names := lessons.Names(ls)
	for i, n := range names {
		if n == name && i+1 < len(names) {
			return "/lessons/" + names[i+1], ls[names[i+1]].Title
		}
	}
	return "/lessons", ""
}

// LessonList is the lessons page: every lesson's link, in order.
func LessonList(ls map[string]*lessons.Lesson) views.LessonList {
	return views.LessonList{Lessons: LessonLinks(ls)}
}

// TryOther is "Try this on another model" for a step whose Explorer link
// is explorer, on lesson model own: the link's fields but the model (a
// stage by name stays: the other model opens at the same stage, or at the
// start with a notice when it has no such layer), and the other models
// offered (label names each); nil when there is none.
func TryOther(own, explorer string, models []string, label func(model string) string) *views.TryOther {
	u, err := url.Parse(explorer)
	if err != nil {
		return nil
	}
	t := &views.TryOther{Model: own, Labels: map[string]string{}}
	for _, m := range models {
		if m != own {
			t.Models = append(t.Models, m)
			t.Labels[m] = label(m)
		}
	}
	if len(t.Models) == 0 {
		return nil
	}
	q := u.Query()
	for _, k := range slices.Sorted(maps.Keys(q)) {
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

package classroom

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/a-h/templ"

	"stepthrough/lessons"
	"stepthrough/present"
	"stepthrough/views"
	"stepthrough/wsconn"
)

// The room's views. Everything here runs on the room's goroutine.

func render(c templ.Component) []byte {
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		return []byte(`<p class="error">render failed</p>`)
	}
	return buf.Bytes()
}

// Note renders a message for one client, shown in #student-note (students)
// or #teach-note (the instructor's page shows both ids).
func Note(msg string) []byte { return render(views.Note(msg)) }

// view builds what followers see.
func (r *Room) view() views.RoomView {
	v := views.RoomView{Code: r.code, Explorer: present.Explorer(r.se), Version: r.stored, Broadcast: r.broadcasts}
	if l := r.lesson; l != nil {
		i := r.state.LessonStep
		st := l.Steps[i]
		v.LessonTitle, v.LessonStep, v.LessonSteps, v.StepTitle = l.Title, i, len(l.Steps), st.Title
		v.Narration = present.Paragraphs(st.Narration)
		v.Highlight = present.Highlights(r.se.Tokenizer(), st)
		v.Question, v.Hidden = r.question()
	}
	return v
}

// question is the poll at the room's lesson step, if there is one, and
// whether it hides the stage.
func (r *Room) question() (*views.RoomQuestion, bool) {
	if r.lesson == nil {
		return nil, false
	}
	i := r.state.LessonStep
	lq := r.lesson.Steps[i].Question
	st, tk, ok := r.se.Current()
	if lq == nil || !ok {
		return nil, false
	}
	revealed := r.state.Revealed[i]
	q := &views.RoomQuestion{AnswerMax: lessons.MaxAnswerBytes, Kind: lq.Kind, Text: lq.Text, Revealed: revealed, Total: len(r.answers[i])}
	for _, c := range lq.Choices {
		b, _ := json.Marshal(map[string]string{"action": "answer", "answer": c})
		q.Choices = append(q.Choices, views.PollChoice{Answer: lessons.Shown(c), Label: lessons.Label(lq.Kind, c), Vals: string(b)})
	}
	if revealed {
		_, q.Reveal = lessons.EngineAnswer(st, tk, lq)
		q.Results = PollRows(st, tk, lq, r.answers[i], true)
	}
	return q, !revealed && !r.lesson.Steps[i].PanelShown // the numbers wait for the reveal
}

func (r *Room) statusView() views.RoomStatus {
	st := views.RoomStatus{Where: present.Where(new(r.se.Snapshot())), Unsaved: r.unsaved.err != nil}
	if r.lesson != nil {
		st.LessonStep, st.LessonSteps = r.state.LessonStep, len(r.lesson.Steps)
	}
	return st
}

// render renders the followers' bytes once. A state no view can draw is
// an error, never a panic: the caller puts the room back (restore). The
// state that rendered becomes the room's last good one.
func (r *Room) render() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
			r.cl.log.Error("a room's view could not be drawn", "room", r.code, "panic", err.Error(), "stack", string(debug.Stack()))
		}
	}()
	if f := r.cl.cfg.beforeRender; f != nil {
		f(r.state)
	}
	main := render(views.RoomMain(r.view()))
	status := render(views.RoomStatusView(r.statusView()))
	r.shown = append(main, status...)
	r.follow = wsconn.Prepare(r.shown)
	r.status = wsconn.Prepare(status)
	r.good, r.hasGood = r.state.clone(), true
	return nil
}

// renderBroken renders what followers see when no state of the room can
// be drawn: the room's code and why, nothing from its session.
func (r *Room) renderBroken(why string) {
	main := render(views.RoomMain(views.RoomView{Code: r.code, Version: r.stored, Explorer: views.Explorer{Error: why}}))
	r.shown = main
	r.follow, r.status = wsconn.Prepare(main), wsconn.Prepare(nil)
}

// broadcast sends the current state to every client: followers get the
// view, students exploring get where the class is, instructors their
// page; each student also gets their own answer line (rendered once per
// distinct answer: most students share one, often the empty line).
func (r *Room) broadcast() {
	start := time.Now()
	defer func() {
		r.cl.counts.broadcasts.Add(1)
		if f := r.cl.cfg.OnBroadcast; f != nil {
			f(time.Since(start), len(r.clients))
		}
	}()
	r.broadcasts++
	if err := r.render(); err != nil {
		r.restore(err)
		return
	}
	r.send()
}

// send sends the rendered state to every client (see broadcast).
func (r *Room) send() {
	var extras []byte
	mine := map[string][]byte{}
	for c := range r.clients {
		switch {
		case c.instructor:
			if extras == nil {
				extras = r.teachExtras()
			}
			c.conn.Send(r.follow)
			c.conn.SendBytes(extras)
		case c.exploring.Load() != nil:
			c.conn.Send(r.status)
		default:
			c.conn.Send(r.follow)
			a := r.answers[r.state.LessonStep][c.student]
			if mine[a] == nil {
				mine[a] = r.pollMine(c.student)
			}
			c.conn.SendBytes(mine[a])
		}
	}
}

// pollMine renders a student's own answer at the room's step and, once
// revealed, how it compares with the engine's.
func (r *Room) pollMine(student string) []byte {
	i := r.state.LessonStep
	a := r.answers[i][student]
	verdict, right := "", ""
	if st, tk, ok := r.se.Current(); a != "" && r.state.Revealed[i] && r.lesson != nil && ok {
		lq := r.lesson.Steps[i].Question
		want, _ := lessons.EngineAnswer(st, tk, lq)
		if lessons.Judge(lq.Kind, want, a) {
			verdict, right = "matches the engine's answer", "true"
		} else {
			verdict, right = fmt.Sprintf("the engine's answer is %q", want), "false"
		}
	}
	return render(views.PollMine(lessons.Shown(a), verdict, right))
}

// teachControls is the part of the instructor's page TeachExtras shows
// (without the stage's panel, which every broadcast renders once anyway).
func (r *Room) teachControls() views.TeachPage {
	p := views.TeachPage{Code: r.code, IsLesson: r.lesson != nil, PrevStep: -1, NextStep: -1}
	p.Room.Question, _ = r.question()
	if l := r.lesson; l != nil {
		i := r.state.LessonStep
		if i > 0 {
			p.PrevStep = i - 1
		}
		if i+1 < len(l.Steps) {
			p.NextStep = i + 1
		}
		p.Notes = strings.Join(strings.Fields(l.Steps[i].Notes), " ")
		for _, src := range l.Steps[i].Sources {
			p.Notes = strings.TrimSpace(p.Notes + " Source: " + src)
		}
	}
	p.Stats = r.teachStats()
	return p
}

func (r *Room) teachStats() views.TeachStats {
	var st views.TeachStats
	seen := map[string]bool{}
	following := map[string]bool{}
	for c := range r.clients {
		if c.instructor || c.projector {
			continue
		}
		seen[c.student] = true
		if c.exploring.Load() == nil {
			following[c.student] = true
		}
	}
	st.Connected, st.Following = len(seen), len(following)
	st.Unsaved = r.unsaved.pending()
	st.Refused, st.PerAddress = r.refused, r.cl.cfg.StudentsPerAddress
	if r.lesson != nil {
		if lq := r.lesson.Steps[r.state.LessonStep].Question; lq != nil {
			st.Question = true
			st.Answered = len(r.answers[r.state.LessonStep])
			if step, tk, ok := r.se.Current(); ok {
				st.Live = PollRows(step, tk, lq, r.answers[r.state.LessonStep], false)
			}
		}
	}
	return st
}

// teachExtras renders the instructor-only fragment.
func (r *Room) teachExtras() []byte { return render(views.TeachExtras(r.teachControls())) }

// teachSoon refreshes the instructors' numbers at most every
// instructorEvery, however fast answers and joins arrive.
func (r *Room) teachSoon() {
	if r.due {
		return
	}
	r.due = true
	time.AfterFunc(instructorEvery, func() {
		r.post(func() {
			r.due = false
			var msg []byte
			for c := range r.clients {
				if c.instructor {
					if msg == nil {
						msg = r.teachExtras()
					}
					c.conn.SendBytes(msg)
				}
			}
		})
	})
}

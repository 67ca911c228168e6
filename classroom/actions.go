package classroom

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"stepthrough/lessons"
	"stepthrough/present"
	"stepthrough/session"
	"stepthrough/spec"
	"stepthrough/views"
	"stepthrough/wsconn"
)

// Role is how a connection takes part in a room.
type Role int

const (
	Student    Role = iota // follows, answers, may explore on its own
	Instructor             // drives the room
	Projector              // follows only: the view to show the class, no key in it
)

// Actions each side of a room may send.
var (
	// the instructor's Explorer actions but reset (the room's run is the
	// lesson's), and the room's own
	instructorActions = session.ActionSet([]string{session.ActionReset}, "lesson-step", "reveal", "end-room")
	studentActions    = session.ActionSet(nil, "answer", "explore", "rejoin")
)

// ParseMessage validates a room message from one side (the fuzz target's
// entry point).
func ParseMessage(raw []byte, instructor bool) (wsconn.Message, error) {
	if instructor {
		return wsconn.Parse(raw, instructorActions)
	}
	return wsconn.Parse(raw, studentActions)
}

// Attach joins a connection from a client address to the room — the
// instructor's, or a student's — and serves it until it ends. A full or
// closed room refuses it with a close code and reason.
func (r *Room) Attach(conn *wsconn.Conn, addr, student string, role Role) {
	instructor := role == Instructor
	c := &client{conn: conn, addr: addr, student: student, instructor: instructor, projector: role == Projector}
	var refused error
	err := r.do(conn.Context(), func() {
		if r.closed {
			refused = ErrRoomGone
			return
		}
		if !instructor && r.students() >= r.cl.cfg.MaxStudents {
			refused = ErrRoomFull
			return
		}
		if !instructor && !r.allowJoin(time.Now()) {
			refused = ErrJoinsTooFast
			return
		}
		r.touch()
		r.clients[c] = true
		r.nclients.Add(1)
		conn.Send(r.follow)
		switch {
		case instructor:
			r.setExpiry(time.Now().Add(r.cl.cfg.RoomTTL)) // kept while its instructor is here
			r.persist(conn.Context())
			conn.SendBytes(r.teachExtras())
			if msg := strings.TrimSpace(r.damage + " " + r.state.Broken); msg != "" {
				conn.Note(msg)
			}
		case c.projector: // it follows, nothing more
		default:
			conn.SendBytes(render(views.StudentBarView(views.StudentBar{})))
			conn.SendBytes(r.pollMine(student))
		}
		r.teachSoon()
	})
	switch {
	case err != nil:
		conn.Refuse(wsconn.CloseRestart, "reconnect")
		return
	case refused == ErrRoomFull:
		conn.Refuse(wsconn.ClosePolicy, refused.Error())
		return
	case refused == ErrJoinsTooFast:
		conn.Refuse(wsconn.CloseTryLater, refused.Error())
		return
	case refused != nil:
		conn.Refuse(wsconn.CloseRestart, "reconnect")
		return
	}
	defer r.post(func() {
		r.touch()
		if r.clients[c] {
			delete(r.clients, c)
			r.nclients.Add(-1)
		}
		r.release(c)
		if instructor && !r.closed && r.instructors() == 0 {
			r.setExpiry(time.Now().Add(r.cl.cfg.InstructorGone)) // ends unless an instructor comes back
			r.persist(r.engineCtx())
		}
		r.teachSoon()
	})
	conn.Serve(func(ctx context.Context, raw []byte) {
		if c.projector {
			conn.Note("the projector view follows the instructor; it takes no actions")
			return
		}
		msg, err := ParseMessage(raw, instructor)
		if err != nil {
			conn.Note(err.Error())
			return
		}
		if instructor {
			r.instructorAct(ctx, c, msg)
		} else {
			r.studentAct(ctx, c, msg)
		}
	})
}

// instructors counts connected instructor pages.
func (r *Room) instructors() int {
	n := 0
	for c := range r.clients {
		if c.instructor {
			n++
		}
	}
	return n
}

// students counts connected student tabs.
func (r *Room) students() int {
	n := 0
	for c := range r.clients {
		if !c.instructor {
			n++
		}
	}
	return n
}

// instructorAct applies the instructor's action on the room's goroutine
// and broadcasts the result; errors go to the instructor alone.
func (r *Room) instructorAct(ctx context.Context, c *client, msg wsconn.Message) {
	r.do(ctx, func() {
		if r.closed {
			return
		}
		r.touch()
		if err := r.change(ctx, msg); err != nil {
			c.conn.Note(err.Error())
			return
		}
		if r.closed { // ended
			return
		}
		r.setExpiry(time.Now().Add(r.cl.cfg.RoomTTL))
		c.conn.Note("")
		if r.persist(ctx) { // shown once the store took it; refused, the room already shows the store's
			r.broadcast()
		}
	})
}

// change applies one instructor action to the room's state.
func (r *Room) change(ctx context.Context, msg wsconn.Message) error {
	switch msg.Action {
	case "lesson-step":
		v, _ := msg.Get("to")
		i, err := strconv.Atoi(v)
		if r.lesson == nil || err != nil || i < 0 || i >= len(r.lesson.Steps) {
			return fmt.Errorf("lesson step %q does not exist", truncate(v, 10))
		}
		if err := r.gotoLessonStep(ctx, i); err != nil {
			r.rebuild(ctx) // back to where the class was
			return err
		}
		return nil
	case "end-room":
		r.end(ctx)
		return nil
	case "reveal":
		if r.lesson == nil || r.lesson.Steps[r.state.LessonStep].Question == nil {
			return fmt.Errorf("this step has no question to reveal")
		}
		if r.state.Revealed == nil {
			r.state.Revealed = map[int]bool{}
		}
		r.state.Revealed[r.state.LessonStep] = true
		return nil
	}
	if err := r.se.Act(ctx, msg.Action, msg.Get); err != nil {
		if !r.se.HasRun() { // a failed pass lost the trace: the class stays where it was
			r.rebuild(ctx)
		}
		return err
	}
	r.capture()
	return nil
}

// end ends the room now, for everyone: its code and instructor link stop
// working, every screen says so and the connections close without
// reconnecting. The next lookup or sweep drops it from memory and the
// store (answers included: the page asks to download the CSV first).
func (r *Room) end(ctx context.Context) {
	r.setExpiry(time.Now())
	err := r.save(ctx)
	if errors.Is(err, ErrConflict) { // changed elsewhere meanwhile: end the stored room as it is
		if sr, lerr := r.cl.store.LoadRoom(ctx, r.code); lerr == nil {
			r.state = sr.State
			r.hold(sr.Version)
			err = r.save(ctx)
		}
	}
	if err != nil {
		r.cl.log.Error("ending a room", "room", r.code, "err", err)
	}
	r.finish()
	r.cl.log.Info("room ended by its instructor", "room", r.code)
}

// studentAct handles a student's message: an answer, explore/rejoin, or an
// Explorer action on their own branch (run on the student's connection,
// not the room's goroutine).
func (r *Room) studentAct(ctx context.Context, c *client, msg wsconn.Message) {
	switch msg.Action {
	case "answer":
		v, _ := msg.Get("answer")
		r.do(ctx, func() { r.answer(ctx, c, v) })
	case "explore":
		var st State
		exploring := false
		if r.do(ctx, func() { st, exploring = r.state, c.exploring.Load() != nil }) != nil || exploring {
			return
		}
		b, err := r.cl.cfg.Sessions.NewBranch(c.addr) // a branch counts as an Explorer tab of the student's address
		if err != nil {
			c.conn.Note(err.Error())
			return
		}
		err = b.Open(ctx, st.Run)
		e := present.Explorer(b)
		if err != nil {
			e.Error = err.Error()
		}
		html := append(render(views.ExploringMain(e)), render(views.StudentBarView(views.StudentBar{Exploring: true}))...)
		if r.do(ctx, func() {
			if !r.clients[c] || !c.exploring.CompareAndSwap(nil, b) {
				r.cl.cfg.Sessions.Release(b)
				return
			}
			c.conn.SendBytes(html)
			r.teachSoon()
		}) != nil {
			r.cl.cfg.Sessions.Release(b)
		}
	case "rejoin":
		r.do(ctx, func() {
			r.release(c)
			c.conn.Send(r.follow)
			c.conn.SendBytes(render(views.StudentBarView(views.StudentBar{})))
			c.conn.SendBytes(r.pollMine(c.student))
			r.teachSoon()
		})
	default: // the Explorer's actions, on the student's own branch
		b := c.exploring.Load()
		if b == nil {
			c.conn.Note("you are following the instructor: press “Explore on my own” to try things yourself")
			return
		}
		err := b.Act(ctx, msg.Action, spec.Getter(msg.Get))
		e := present.Explorer(b)
		if err != nil {
			e.Error = err.Error()
		}
		c.conn.SendBytes(render(views.ExploringMain(e)))
	}
}

// answer records a student's answer at the room's step.
func (r *Room) answer(ctx context.Context, c *client, v string) {
	i := r.state.LessonStep
	var lq *lessons.Question
	if r.lesson != nil {
		lq = r.lesson.Steps[i].Question
	}
	tk := r.se.Tokenizer()
	switch {
	case lq == nil:
		c.conn.Note("there is no question to answer at this step")
		return
	case r.state.Revealed[i]:
		c.conn.Note("the answer has been revealed: answers are closed")
		return
	case tk == nil:
		return
	}
	a, err := lessons.CheckAnswer(tk, lq, v)
	if err != nil {
		c.conn.Note(err.Error())
		return
	}
	if !r.admitVoter(c) {
		r.refused++
		c.conn.Note(fmt.Sprintf("your answer was not counted: %d students have already answered from your network address (the room's limit); tell your instructor", r.cl.cfg.StudentsPerAddress))
		r.teachSoon()
		return
	}
	if r.answers[i] == nil {
		r.answers[i] = map[string]string{}
	}
	r.answers[i][c.student] = a
	r.persistAnswer(ctx, i, c.student, a)
	c.conn.SendBytes(r.pollMine(c.student))
	c.conn.Note("")
	r.teachSoon()
}

// admitVoter reports whether a student may answer: one who has answered
// before may, and a new one while fewer than StudentsPerAddress students
// have answered from the same address. A student id costs a page load,
// so without this one address could cast any number of votes.
func (r *Room) admitVoter(c *client) bool {
	if r.voters == nil {
		r.voters = map[string]map[string]bool{}
	}
	ids := r.voters[c.addr]
	if ids[c.student] {
		return true
	}
	for _, m := range r.answers { // answered before this server started
		if _, ok := m[c.student]; ok {
			return true
		}
	}
	if len(ids) >= r.cl.cfg.StudentsPerAddress {
		return false
	}
	if ids == nil {
		ids = map[string]bool{}
		r.voters[c.addr] = ids
	}
	ids[c.student] = true
	return true
}

// release ends a client's branch, if it has one.
func (r *Room) release(c *client) {
	if b := c.exploring.Swap(nil); b != nil {
		r.cl.cfg.Sessions.Release(b)
	}
}

// allowJoin counts a student connection against the room's limit of
// joins a minute (4 × MaxStudents: every student reconnecting at once
// after a restart fits; a script opening connections in a loop does not).
func (r *Room) allowJoin(now time.Time) bool {
	r.joins = slices.DeleteFunc(r.joins, func(t time.Time) bool { return now.Sub(t) > time.Minute })
	if len(r.joins) >= 4*r.cl.cfg.MaxStudents {
		return false
	}
	r.joins = append(r.joins, now)
	return true
}

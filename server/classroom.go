package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	qrcode "github.com/skip2/go-qrcode"

	"stepthrough/lessons"
	"stepthrough/views"
)

// Classroom routes:
//
//	GET  /classroom               start a room from a lesson, or join one
//	GET  /join?code=C             → /rooms/C
//	POST /rooms                   lesson=NAME or explorer=/?prompt=…: a new room → its instructor link
//	GET  /rooms/C                 a student's page (an anonymous id in a cookie)
//	GET  /rooms/C/teach?key=K     the instructor's page (K is the instructor secret)
//	GET  /rooms/C/ws              the room's WebSocket (?student=ID or ?key=K)
//	GET  /rooms/C/poll.csv?key=K  every poll answer
func (s *Server) classroomRoutes(e *echo.Echo) {
	e.GET("/classroom", s.classroomHome)
	e.GET("/join", s.join)
	e.POST("/rooms", s.startRoom)
	e.GET("/rooms/:code", s.studentPage)
	e.GET("/rooms/:code/teach", s.teachRoom)
	e.GET("/rooms/:code/ws", s.roomWS)
	e.GET("/rooms/:code/poll.csv", s.pollCSV)
}

const studentCookie = "stepthrough_student"

func (s *Server) classroomHome(c echo.Context) error {
	return s.classroomHomeWith(c, http.StatusOK, "", "")
}

func (s *Server) classroomHomeWith(c echo.Context, status int, msg, code string) error {
	h := views.ClassroomHome{Error: msg, Code: code}
	for _, name := range lessons.Names(s.lessons) {
		x := s.lessons[name]
		h.Lessons = append(h.Lessons, views.LessonLink{Name: name, Title: x.Title, Summary: x.Summary, Level: x.Level, Duration: x.Duration, Steps: len(x.Steps)})
	}
	return c.HTMLBlob(status, renderTo(views.ClassroomHomePage(h)))
}

// lookupRoom finds a room by a code from a URL or form, counting unknown
// codes against the client so codes cannot be guessed by brute force.
func (s *Server) lookupRoom(c echo.Context, raw string) (*Room, error) {
	client := clientOf(c)
	if !s.class.allowJoin(client, false) {
		return nil, errTooManyTries
	}
	code, ok := normalizeCode(raw)
	if !ok {
		s.class.allowJoin(client, true)
		return nil, fmt.Errorf("%q is not a join code: codes are %d letters and digits", truncate(raw, 20), codeLen)
	}
	r, err := s.room(c.Request().Context(), code)
	if err != nil {
		s.class.allowJoin(client, true)
		return nil, err
	}
	return r, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func (s *Server) join(c echo.Context) error {
	raw := c.QueryParam("code")
	r, err := s.lookupRoom(c, raw)
	if err != nil {
		return s.classroomHomeWith(c, statusOf(err), err.Error(), truncate(raw, 16))
	}
	return c.Redirect(http.StatusSeeOther, "/rooms/"+r.code)
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, errTooManyTries), errors.Is(err, errRoomLimit):
		return http.StatusTooManyRequests
	case errors.Is(err, errRoomsFull):
		return http.StatusServiceUnavailable
	case errors.Is(err, errRoomGone):
		return http.StatusNotFound
	}
	return http.StatusBadRequest
}

// startRoom creates a room and sends the instructor to its page.
func (s *Server) startRoom(c echo.Context) error {
	if !sameOrigin(c.Request()) {
		return c.String(http.StatusForbidden, "cross-site request refused")
	}
	name := c.FormValue("lesson")
	var explorer map[string]string
	if name == "" {
		raw := c.FormValue("explorer")
		if len(raw) > 8<<10 {
			return s.classroomHomeWith(c, http.StatusBadRequest, "the Explorer link is too long", "")
		}
		u, err := url.Parse(raw)
		if err != nil || raw == "" {
			return s.classroomHomeWith(c, http.StatusBadRequest, "choose a lesson, or start from the Explorer", "")
		}
		explorer = map[string]string{}
		for k, v := range u.Query() {
			if _, ok := settingKeys[k]; ok || k == "step" || k == "stage" || k == "head" {
				explorer[k] = v[0]
			}
		}
	} else if _, ok := s.lessons[name]; !ok {
		return s.classroomHomeWith(c, http.StatusNotFound, fmt.Sprintf("no lesson %q", truncate(name, 40)), "")
	}
	r, secret, err := s.createRoom(c.Request().Context(), clientOf(c), name, explorer)
	if err != nil {
		return s.classroomHomeWith(c, statusOf(err), err.Error(), "")
	}
	return c.Redirect(http.StatusSeeOther, "/rooms/"+r.code+"/teach?key="+secret)
}

func validStudent(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// studentPage shows the room as it is now; the WebSocket keeps it current.
func (s *Server) studentPage(c echo.Context) error {
	r, err := s.lookupRoom(c, c.Param("code"))
	if err != nil {
		return s.classroomHomeWith(c, statusOf(err), err.Error(), "")
	}
	id := ""
	if ck, err := c.Cookie(studentCookie); err == nil && validStudent(ck.Value) {
		id = ck.Value
	} else {
		var b [16]byte
		rand.Read(b[:])
		id = hex.EncodeToString(b[:])
		c.SetCookie(&http.Cookie{Name: studentCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, MaxAge: int(s.cfg.RoomTTL.Seconds())})
	}
	r.mu.Lock()
	p := views.StudentPage{Code: r.code, Student: id, Room: s.roomView(r), Status: s.roomStatus(r)}
	r.mu.Unlock()
	return c.HTMLBlob(http.StatusOK, renderTo(views.StudentRoomPage(p)))
}

func (s *Server) instructorRoom(c echo.Context) (*Room, error) {
	code, ok := normalizeCode(c.Param("code"))
	if !ok {
		return nil, errRoomGone
	}
	r, err := s.room(c.Request().Context(), code)
	if err != nil {
		return nil, err
	}
	if !r.isInstructor(c.QueryParam("key")) {
		return nil, errNotInstructor
	}
	return r, nil
}

var errNotInstructor = errors.New("this link is not the room's instructor link")

func (s *Server) teachRoom(c echo.Context) error {
	r, err := s.instructorRoom(c)
	if err != nil {
		st := statusOf(err)
		if errors.Is(err, errNotInstructor) {
			st = http.StatusForbidden
		}
		return s.classroomHomeWith(c, st, err.Error(), "")
	}
	key := c.QueryParam("key")
	joinURL := c.Scheme() + "://" + c.Request().Host + "/rooms/" + r.code
	r.mu.Lock()
	p := s.teachPage(r)
	exp := r.expires
	r.mu.Unlock()
	p.Key, p.JoinURL = key, joinURL
	p.InstructURL = "/rooms/" + r.code + "/teach?key=" + key
	p.CSVURL = "/rooms/" + r.code + "/poll.csv?key=" + key
	p.Expires = "at " + exp.Format("15:04 MST") + " unless you keep teaching"
	if q, err := qrcode.New(joinURL, qrcode.Medium); err == nil {
		q.DisableBorder = true // the SVG draws the quiet zone
		p.QR = q.Bitmap()
	}
	if r.lesson == nil {
		p.Settings = views.Page{Models: s.reg.Names(), Settings: r.state.Settings}
	}
	h := c.Response().Header()
	h.Set("Referrer-Policy", "no-referrer") // the key is in this page's address
	h.Set("Cache-Control", "no-store")
	return c.HTMLBlob(http.StatusOK, renderTo(views.TeachRoomPage(p)))
}

// pollCSV exports every answer given in the room.
func (s *Server) pollCSV(c echo.Context) error {
	r, err := s.instructorRoom(c)
	if err != nil {
		if errors.Is(err, errNotInstructor) {
			return c.String(http.StatusForbidden, err.Error())
		}
		return c.String(statusOf(err), err.Error())
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"lesson_step", "question", "student", "answer", "engine_answer", "correct"})
	r.mu.Lock()
	steps := make([]int, 0, len(r.answers))
	for k := range r.answers {
		steps = append(steps, k)
	}
	sort.Ints(steps)
	students := map[string]int{} // anonymous numbers, in order of first answer
	for _, i := range steps {
		var lq *lessons.Question
		if r.lesson != nil && i < len(r.lesson.Steps) {
			lq = r.lesson.Steps[i].Question
		}
		engineAns := ""
		if lq != nil && r.state.Revealed[i] {
			engineAns = s.engineAnswerAt(c.Request().Context(), r, i)
		}
		ids := make([]string, 0, len(r.answers[i]))
		for id := range r.answers[i] {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			if _, ok := students[id]; !ok {
				students[id] = len(students) + 1
			}
			a := r.answers[i][id]
			text, correct := "", ""
			if lq != nil {
				text = lq.Text
			}
			if engineAns != "" {
				correct = strconv.FormatBool(judge(lq.Kind, engineAns, a))
			}
			w.Write([]string{strconv.Itoa(i + 1), text, "student " + strconv.Itoa(students[id]), csvSafe(a), csvSafe(engineAns), correct})
		}
	}
	r.mu.Unlock()
	w.Flush()
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="room-%s-polls.csv"`, r.code))
	return c.Blob(http.StatusOK, "text/csv; charset=utf-8", buf.Bytes())
}

// csvSafe keeps a spreadsheet from reading an answer as a formula.
func csvSafe(s string) string {
	if s != "" && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@') {
		return "'" + s
	}
	return s
}

// engineAnswerAt replays lesson step i in a scratch session for its
// engine answer (the room itself may be elsewhere). r.mu is held.
func (s *Server) engineAnswerAt(ctx context.Context, r *Room, i int) string {
	if i == r.state.LessonStep {
		a, _ := engineAnswer(r.se, r.lesson.Steps[i].Question)
		return a
	}
	se := newSession("scratch", "", s.reg)
	defer se.close()
	se.playLesson(ctx, r.lesson, i)
	if se.err != "" || len(se.cur.Steps) == 0 {
		return ""
	}
	a, _ := engineAnswer(se, r.lesson.Steps[i].Question)
	return a
}

var roomUpgrader = websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 16384, CheckOrigin: sameOrigin, EnableCompression: true}

var (
	instructorActions = map[string]bool{"lesson-step": true, "reveal": true, "end-room": true, "run": true, "step": true, "back": true,
		"next-token": true, "end": true, "temperature": true, "view": true}
	studentActions = map[string]bool{"answer": true, "explore": true, "rejoin": true, "run": true, "step": true, "back": true,
		"next-token": true, "end": true, "reset": true, "temperature": true, "view": true}
)

// roomWS is a room connection: the instructor's (?key=) or a student's
// (?student=). One reader (this goroutine) and one writer.
func (s *Server) roomWS(c echo.Context) error {
	code, ok := normalizeCode(c.Param("code"))
	if !ok {
		return c.String(http.StatusNotFound, errRoomGone.Error())
	}
	r, err := s.room(c.Request().Context(), code)
	if err != nil {
		return c.String(statusOf(err), err.Error())
	}
	key, student := c.QueryParam("key"), c.QueryParam("student")
	instructor := key != "" && r.isInstructor(key)
	if key != "" && !instructor {
		return c.String(http.StatusForbidden, errNotInstructor.Error())
	}
	if !instructor && !validStudent(student) {
		return c.String(http.StatusBadRequest, "a student connection needs ?student=ID (32 hex digits)")
	}
	conn, err := roomUpgrader.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		return nil
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	cl := &roomClient{student: student, instructor: instructor, out: make(chan *websocket.PreparedMessage, clientQueue), kick: cancel}

	r.mu.Lock()
	if r.closed { // unloaded or expired since the lookup: the client reconnects and finds it again
		r.mu.Unlock()
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseServiceRestart, "reconnect"), time.Now().Add(time.Second))
		return nil
	}
	r.lastActive = time.Now()
	if !instructor && r.students() >= s.cfg.MaxStudents {
		r.mu.Unlock()
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, errRoomFull.Error()), time.Now().Add(time.Second))
		return nil
	}
	r.clients[cl] = true
	cl.send(r.follow)
	if instructor {
		cl.send(prepared(s.teachExtras(r)))
	} else {
		cl.send(prepared(renderTo(views.StudentBarView(views.StudentBar{}))))
		cl.send(prepared(s.pollMine(r, student)))
	}
	s.teachSoon(r)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.lastActive = time.Now()
		delete(r.clients, cl)
		if cl.exploring != nil {
			cl.exploring.mu.Lock()
			cl.exploring.close()
			cl.exploring.mu.Unlock()
		}
		s.teachSoon(r)
		r.mu.Unlock()
	}()
	go roomWriter(ctx, conn, cl)

	conn.SetReadLimit(maxMessage)
	conn.SetReadDeadline(time.Now().Add(pongWait))
	conn.SetPongHandler(func(string) error { conn.SetReadDeadline(time.Now().Add(pongWait)); return nil })
	lim, warned := newLimiter(), false
	known := studentActions
	if instructor {
		known = instructorActions
	}
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			return nil
		}
		conn.SetReadDeadline(time.Now().Add(pongWait))
		if !lim.allow(time.Now()) {
			if !warned { // once per flood, not per message
				cl.sendNote(prepared(note("too many messages: slow down")))
			}
			warned = true
			continue
		}
		warned = false
		action, get, err := parseMessageFor(msg, known)
		if err != nil {
			cl.sendNote(prepared(note(err.Error())))
			continue
		}
		if instructor {
			s.instructorAct(ctx, r, cl, action, get)
		} else {
			s.studentAct(ctx, r, cl, action, get)
		}
	}
}

// note is a message for one client, shown in #student-note (students) or
// #teach-note (the instructor's page shows both ids).
func note(msg string) []byte {
	return renderTo(views.Note(msg))
}

func roomWriter(ctx context.Context, conn *websocket.Conn, cl *roomClient) {
	ping := time.NewTicker(pingPeriod)
	defer ping.Stop()
	defer conn.Close() // a kicked client's reader stops too
	out := cl.out
	for {
		select {
		case <-ctx.Done():
			if cl.ended.Load() { // the room ended: the last view, then a normal close (no reconnect)
				for len(out) > 0 {
					conn.SetWriteDeadline(time.Now().Add(writeWait))
					if conn.WritePreparedMessage(<-out) != nil {
						return
					}
				}
				conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "the room has ended"), time.Now().Add(time.Second))
				return
			}
			// 1012 (service restart): the htmx ws extension reconnects.
			conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseServiceRestart, "reconnect"), time.Now().Add(time.Second))
			return
		case m := <-out:
			conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := conn.WritePreparedMessage(m); err != nil {
				return
			}
		case <-ping.C:
			conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		}
	}
}

// students counts connected student tabs. r.mu is held.
func (r *Room) students() int {
	n := 0
	for c := range r.clients {
		if !c.instructor {
			n++
		}
	}
	return n
}

// instructorAct applies the instructor's action to the room and
// broadcasts the result; errors go to the instructor alone.
func (s *Server) instructorAct(ctx context.Context, r *Room, cl *roomClient, action string, get func(string) (string, bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.lastActive = time.Now()
	se := r.se
	se.mu.Lock()
	switch action {
	case "lesson-step":
		v, _ := get("to")
		i, err := strconv.Atoi(v)
		if r.lesson == nil || err != nil || i < 0 || i >= len(r.lesson.Steps) {
			se.mu.Unlock()
			cl.sendNote(prepared(note(fmt.Sprintf("lesson step %q does not exist", truncate(v, 10)))))
			return
		}
		s.gotoLessonStep(ctx, r, i)
	case "end-room":
		se.mu.Unlock()
		s.endRoom(ctx, r)
		return
	case "reveal":
		if r.lesson == nil || r.lesson.Steps[r.state.LessonStep].Question == nil {
			se.mu.Unlock()
			cl.sendNote(prepared(note("this step has no question to reveal")))
			return
		}
		if r.state.Revealed == nil {
			r.state.Revealed = map[int]bool{}
		}
		r.state.Revealed[r.state.LessonStep] = true
	case "run":
		prev := r.state
		se.act(ctx, action, get)
		if se.err != "" { // keep the class where it was; tell the instructor
			msg := se.err
			se.err = ""
			s.rebuildIfBroken(ctx, r, prev)
			se.mu.Unlock()
			cl.sendNote(prepared(note(msg)))
			return
		}
	default:
		se.act(ctx, action, get)
		if se.err != "" {
			msg := se.err
			se.err = ""
			se.mu.Unlock()
			cl.sendNote(prepared(note(msg)))
			return
		}
	}
	r.capture()
	se.mu.Unlock()
	r.expires = time.Now().Add(s.cfg.RoomTTL)
	if err := s.saveRoom(ctx, r); err != nil {
		s.log.Error("saving a room", "room", r.code, "err", err)
		cl.sendNote(prepared(note("the room's state could not be saved: " + err.Error())))
	}
	cl.sendNote(prepared(note("")))
	s.broadcast(r)
}

// endRoom ends a room now, for everyone: its code and instructor link stop
// working, every screen says so and the connections close without
// reconnecting. The next lookup or sweep drops it from memory and the
// store (answers included: the page asks to download the CSV first).
// r.mu is held.
func (s *Server) endRoom(ctx context.Context, r *Room) {
	r.expires = time.Now()
	if err := s.saveRoom(ctx, r); err != nil {
		s.log.Error("ending a room", "room", r.code, "err", err)
	}
	bye := prepared(renderTo(views.RoomEnded()))
	for c := range r.clients {
		c.ended.Store(true)
		c.send(bye)
		c.kick()
	}
	r.closed = true
	r.se.close()
	s.log.Info("room ended by its instructor", "room", r.code)
}

// rebuildIfBroken restores the previous run when a failed "run" left the
// session without a trace.
func (s *Server) rebuildIfBroken(ctx context.Context, r *Room, prev roomState) {
	if len(r.se.cur.Steps) > 0 {
		return
	}
	r.state = prev
	old := r.se
	s.rebuild(ctx, r)
	old.close()
}

// studentAct handles a student's message: an answer, explore/rejoin, or an
// Explorer action on their own branch.
func (s *Server) studentAct(ctx context.Context, r *Room, cl *roomClient, action string, get func(string) (string, bool)) {
	switch action {
	case "answer":
		v, _ := get("answer")
		r.mu.Lock()
		defer r.mu.Unlock()
		i := r.state.LessonStep
		var lq *lessons.Question
		if r.lesson != nil {
			lq = r.lesson.Steps[i].Question
		}
		switch {
		case lq == nil:
			cl.sendNote(prepared(note("there is no question to answer at this step")))
			return
		case r.state.Revealed[i]:
			cl.sendNote(prepared(note("the answer has been revealed: answers are closed")))
			return
		case r.se.m == nil:
			return
		}
		a, err := checkAnswer(r.se, lq, v)
		if err != nil {
			cl.sendNote(prepared(note(err.Error())))
			return
		}
		if r.answers[i] == nil {
			r.answers[i] = map[string]string{}
		}
		r.answers[i][cl.student] = a
		if s.class.store != nil {
			if err := s.class.store.SaveAnswer(context.WithoutCancel(ctx), r.code, i, cl.student, a); err != nil {
				s.log.Error("saving an answer", "room", r.code, "err", err)
			}
		}
		cl.send(prepared(s.pollMine(r, cl.student)))
		cl.sendNote(prepared(note("")))
		s.teachSoon(r)
	case "explore":
		r.mu.Lock()
		if cl.exploring != nil {
			r.mu.Unlock()
			return
		}
		st := r.state
		r.mu.Unlock()
		b := s.replay(ctx, "branch-"+r.code, cl.student, st)
		html := append(renderTo(views.ExploringMain(b.explorer())), renderTo(views.StudentBarView(views.StudentBar{Exploring: true}))...)
		r.mu.Lock()
		cl.exploring = b
		cl.send(prepared(html))
		s.teachSoon(r)
		r.mu.Unlock()
	case "rejoin":
		r.mu.Lock()
		if b := cl.exploring; b != nil {
			cl.exploring = nil
			b.mu.Lock()
			b.close()
			b.mu.Unlock()
		}
		cl.send(r.follow)
		cl.send(prepared(renderTo(views.StudentBarView(views.StudentBar{}))))
		cl.send(prepared(s.pollMine(r, cl.student)))
		s.teachSoon(r)
		r.mu.Unlock()
	default: // the Explorer's actions, on the student's own branch
		r.mu.Lock()
		b := cl.exploring
		r.mu.Unlock()
		if b == nil {
			cl.sendNote(prepared(note("you are following the instructor: press “Explore on my own” to try things yourself")))
			return
		}
		b.mu.Lock()
		b.act(ctx, action, get)
		html := renderTo(views.ExploringMain(b.explorer()))
		b.mu.Unlock()
		cl.send(prepared(html))
	}
}

// closeRooms drops every room connection (clients reconnect to the next
// server) and releases the engine sessions.
func (cl *classroom) closeRooms() {
	cl.mu.Lock()
	rooms := make([]*Room, 0, len(cl.rooms))
	for _, r := range cl.rooms {
		rooms = append(rooms, r)
	}
	cl.rooms = map[string]*Room{}
	cl.closed = true
	cl.mu.Unlock()
	for _, r := range rooms {
		r.closeAll()
	}
	if cl.store != nil {
		cl.store.Close()
	}
}

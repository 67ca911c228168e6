package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/gorilla/websocket"

	"stepthrough/engine"
	"stepthrough/lessons"
	"stepthrough/views"
)

// Classroom limits (Config overrides the first four).
const (
	defaultMaxRooms       = 100
	defaultMaxStudents    = 300 // per room
	defaultRoomTTL        = 12 * time.Hour
	defaultRoomsPerClient = 10
	maxAnswerBytes        = 64
	joinFailures          = 20 // unknown codes a client may try per minute
	clientQueue           = 32 // messages waiting for a slow connection before it is dropped
	instructorEvery       = 150 * time.Millisecond
)

// codeAlphabet has no 0/O or 1/I: codes are read off a projector.
const codeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// codeLen characters give 32^6 ≈ 1.07e9 codes; with joinFailures guesses a
// minute per client, finding one of 100 live rooms takes ~10^5 minutes.
const codeLen = 6

func newCode() string {
	var b [codeLen]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = codeAlphabet[int(b[i])%len(codeAlphabet)] // 256 is a multiple of 32: no bias
	}
	return string(b[:])
}

// normalizeCode upper-cases a typed code and checks its form.
func normalizeCode(s string) (string, bool) {
	s = strings.ToUpper(strings.TrimSpace(s))
	if len(s) != codeLen {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(codeAlphabet, s[i]) < 0 {
			return "", false
		}
	}
	return s, true
}

func hashSecret(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// roomState is everything needed to rebuild a room's view, saved after
// every instructor action.
type roomState struct {
	Lesson     string         `json:"lesson,omitempty"` // empty: a room started from the Explorer
	LessonStep int            `json:"lesson_step"`
	Settings   views.Settings `json:"settings"` // with the seed actually drawn, so a rebuild is identical
	Step       int            `json:"step"`
	Stage      int            `json:"stage"`
	Head       int            `json:"head"`
	Scores     bool           `json:"scores,omitempty"`
	ViewTemp   float64        `json:"view_temperature,omitempty"`
	Revealed   map[int]bool   `json:"revealed,omitempty"` // lesson steps whose question is revealed
}

// Room is one classroom: the instructor's engine session, its state, the
// poll answers and the connected clients.
type Room struct {
	code       string
	secretHash string
	created    time.Time
	lesson     *lessons.Lesson // nil for a free room

	mu      sync.Mutex
	state   roomState
	expires time.Time
	se      *Session
	answers map[int]map[string]string // lesson step → student → answer
	clients map[*roomClient]bool

	follow     *websocket.PreparedMessage // #room-main and #room-status: every follower gets these bytes
	status     *websocket.PreparedMessage // #room-status alone, for students exploring
	followHTML []byte
	teachDue   bool // the instructor's numbers changed; a refresh is scheduled
	version    int  // broadcasts so far
	lastActive time.Time
	closed     bool // unloaded: a client that still holds it must look the room up again
}

// roomClient is one connected tab.
type roomClient struct {
	student    string // empty for the instructor
	instructor bool
	out        chan *websocket.PreparedMessage
	kick       context.CancelFunc // drops the connection (slow consumer, shutdown)
	exploring  *Session           // the student's own branch; nil while following
	ended      atomic.Bool        // the room ended: send what is queued, then close for good
}

// classroom holds the live rooms; the Store keeps them across restarts.
type classroom struct {
	mu       sync.Mutex
	rooms    map[string]*Room
	creators map[string][]time.Time // rooms created per client address, last hour
	failures map[string][]time.Time // unknown codes tried per client, last minute
	store    *Store
	closed   bool // the server is shutting down: no new rooms or loads
}

var (
	errRoomGone     = errors.New("this room has ended or never existed: check the code")
	errRoomsFull    = errors.New("the server has as many rooms as it can hold: try again later")
	errRoomLimit    = errors.New("you have started too many rooms in the last hour")
	errTooManyTries = errors.New("too many wrong codes: wait a minute and try again")
	errRoomFull     = errors.New("this room is full")
)

// send queues a message; a connection that cannot keep up is dropped (it
// reconnects and resumes) so that it never holds up the room.
func (c *roomClient) send(m *websocket.PreparedMessage) {
	select {
	case c.out <- m:
	default:
		c.kick()
	}
}

// sendNote queues a message the client can do without (a warning): when
// the queue is full it is dropped, and the client stays.
func (c *roomClient) sendNote(m *websocket.PreparedMessage) {
	select {
	case c.out <- m:
	default:
	}
}

func prepared(b []byte) *websocket.PreparedMessage {
	m, err := websocket.NewPreparedMessage(websocket.TextMessage, b)
	if err != nil { // only for an invalid message type
		panic(err)
	}
	return m
}

// createRoom starts a room from a lesson (name) or from an Explorer URL's
// settings (explorerQuery).
func (s *Server) createRoom(ctx context.Context, client, lessonName string, explorer map[string]string) (*Room, string, error) {
	cl := s.class
	now := time.Now()
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return nil, "", errRoomsFull
	}
	recent := slices.DeleteFunc(cl.creators[client], func(t time.Time) bool { return now.Sub(t) > time.Hour })
	if len(recent) >= s.cfg.RoomsPerClient {
		cl.mu.Unlock()
		return nil, "", errRoomLimit
	}
	live := len(cl.rooms)
	if cl.store != nil {
		if n, err := cl.store.CountRooms(ctx, now); err == nil {
			live = max(live, n)
		}
	}
	if live >= s.cfg.MaxRooms {
		cl.mu.Unlock()
		return nil, "", errRoomsFull
	}
	code := newCode()
	for cl.rooms[code] != nil {
		code = newCode()
	}
	cl.creators[client] = append(recent, now)
	cl.mu.Unlock()

	var sb [16]byte
	rand.Read(sb[:])
	secret := hex.EncodeToString(sb[:])
	r := &Room{code: code, secretHash: hashSecret(secret), created: now, expires: now.Add(s.cfg.RoomTTL), lastActive: now,
		answers: map[int]map[string]string{}, clients: map[*roomClient]bool{}}
	r.se = newSession("room-"+code, "", s.reg)
	if lessonName != "" {
		l, ok := s.lessons[lessonName]
		if !ok {
			return nil, "", fmt.Errorf("no lesson %q", lessonName)
		}
		r.lesson, r.state.Lesson = l, lessonName
		s.gotoLessonStep(ctx, r, 0)
	} else {
		if explorer["prompt"] == "" {
			explorer["prompt"] = "Once upon a time"
		}
		r.se.open(ctx, func(k string) (string, bool) { v, ok := explorer[k]; return v, ok })
		if r.se.err != "" {
			err := errors.New(r.se.err)
			r.se.close()
			return nil, "", err
		}
		r.capture()
	}
	if err := s.saveRoom(ctx, r); err != nil {
		return nil, "", err
	}
	r.render(s)
	cl.mu.Lock()
	cl.rooms[code] = r
	cl.mu.Unlock()
	s.log.Info("room started", "room", code, "lesson", lessonName, "client", client)
	return r, secret, nil
}

// gotoLessonStep runs lesson step i in the room's session. r.mu is held
// (or the room is not shared yet).
func (s *Server) gotoLessonStep(ctx context.Context, r *Room, i int) {
	l := r.lesson
	if i < 0 || i >= len(l.Steps) {
		return
	}
	r.se.playLesson(ctx, l, i)
	r.state.LessonStep = i
	r.capture()
}

// capture copies the session's position into the saved state.
func (r *Room) capture() {
	se := r.se
	r.state.Settings = se.settings
	if se.smp != nil {
		r.state.Settings.Seed = strconv.FormatUint(se.smp.Seed(), 10)
	}
	r.state.Step, r.state.Stage = 0, 0
	if len(se.cur.Steps) > 0 {
		r.state.Step, r.state.Stage = se.cur.Position()
	}
	r.state.Head, r.state.Scores, r.state.ViewTemp = se.head, se.scores, se.viewTemp
}

// rebuild replays a saved state in a fresh engine session: the same
// settings and seed give the same trace, then the cursor is put back.
func (s *Server) rebuild(ctx context.Context, r *Room) {
	r.se = s.replay(ctx, "room-"+r.code, "", r.state)
}

// replay makes a session in a room's saved state (a rebuilt room, or a
// student's branch).
func (s *Server) replay(ctx context.Context, id, client string, st roomState) *Session {
	se := newSession(id, client, s.reg)
	se.run(ctx, st.Settings)
	if se.err == "" {
		se.seek(ctx, st.Step, st.Stage)
		se.head, se.scores = st.Head, st.Scores
		if st.ViewTemp > 0 {
			se.viewTemp = st.ViewTemp
		}
	}
	return se
}

func (s *Server) saveRoom(ctx context.Context, r *Room) error {
	if s.class.store == nil {
		return nil
	}
	return s.class.store.SaveRoom(context.WithoutCancel(ctx), r.code, r.secretHash, r.state, r.created, r.expires)
}

// room finds a live room, loading it from the store after a restart.
func (s *Server) room(ctx context.Context, code string) (*Room, error) {
	cl := s.class
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.closed { // shutting down
		return nil, errRoomGone
	}
	if r := cl.rooms[code]; r != nil {
		if time.Now().After(r.expiry()) {
			delete(cl.rooms, code)
			r.closeAll()
			return nil, errRoomGone
		}
		return r, nil
	}
	if cl.store == nil {
		return nil, errRoomGone
	}
	sr, err := cl.store.LoadRoom(ctx, code)
	if errors.Is(err, errNoRoom) {
		return nil, errRoomGone
	}
	if err != nil {
		s.log.Error("loading a room", "room", code, "err", err)
		return nil, errRoomGone
	}
	if time.Now().After(sr.Expires) {
		return nil, errRoomGone
	}
	r := &Room{code: code, secretHash: sr.SecretHash, created: sr.Created, expires: sr.Expires, state: sr.State, lastActive: time.Now(),
		answers: sr.Answers, clients: map[*roomClient]bool{}}
	if r.state.Lesson != "" {
		if r.lesson = s.lessons[r.state.Lesson]; r.lesson == nil {
			s.log.Error("a stored room names a lesson this server lacks", "room", code, "lesson", r.state.Lesson)
			return nil, errRoomGone
		}
	}
	if r.state.Revealed == nil {
		r.state.Revealed = map[int]bool{}
	}
	s.rebuild(ctx, r)
	r.render(s)
	cl.rooms[code] = r
	s.log.Info("room resumed from the store", "room", code, "lesson_step", r.state.LessonStep, "answers", len(r.answers))
	return r, nil
}

func (r *Room) expiry() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.expires
}

// joinFailed counts an unknown code against a client; false when the
// client has tried too many.
func (cl *classroom) allowJoin(client string, failed bool) bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	now := time.Now()
	f := slices.DeleteFunc(cl.failures[client], func(t time.Time) bool { return now.Sub(t) > time.Minute })
	if failed {
		f = append(f, now)
	}
	if len(f) == 0 {
		delete(cl.failures, client)
	} else {
		cl.failures[client] = f
	}
	return len(f) < joinFailures
}

// isInstructor checks a key against the room's secret in constant time.
func (r *Room) isInstructor(key string) bool {
	if key == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(hashSecret(key)), []byte(r.secretHash)) == 1
}

// view builds what followers see. r.mu is held.
func (s *Server) roomView(r *Room) views.RoomView {
	e := r.se.explorer()
	v := views.RoomView{Code: r.code, Explorer: e, Version: r.version}
	if l := r.lesson; l != nil {
		i := r.state.LessonStep
		st := l.Steps[i]
		v.LessonTitle, v.LessonStep, v.LessonSteps, v.StepTitle = l.Title, i, len(l.Steps), st.Title
		v.Narration = paragraphs(st.Narration)
		v.Highlight = r.se.lessonHighlights(st)
		v.Question, v.Hidden = s.roomQuestion(r)
	}
	return v
}

// roomQuestion is the poll at the room's lesson step, if there is one,
// and whether it hides the stage. r.mu is held.
func (s *Server) roomQuestion(r *Room) (*views.RoomQuestion, bool) {
	if r.lesson == nil {
		return nil, false
	}
	i := r.state.LessonStep
	lq := r.lesson.Steps[i].Question
	if lq == nil || r.se.err != "" || len(r.se.cur.Steps) == 0 {
		return nil, false
	}
	revealed := r.state.Revealed[i]
	q := &views.RoomQuestion{Kind: lq.Kind, Text: lq.Text, Revealed: revealed, Total: len(r.answers[i])}
	for _, c := range lq.Choices {
		b, _ := json.Marshal(map[string]string{"action": "answer", "answer": c})
		label := c
		if lq.Kind == "next-token" { // tokens: show the spaces
			label = strconv.Quote(c)
		}
		q.Choices = append(q.Choices, views.PollChoice{Answer: c, Label: label, Vals: string(b)})
	}
	if revealed {
		_, q.Reveal = engineAnswer(r.se, lq)
		q.Results = pollRows(r.se, lq, r.answers[i], true)
	}
	return q, lq.Kind != "choice" && !revealed
}

func paragraphs(text string) []string {
	var out []string
	for _, para := range strings.Split(text, "\n\n") {
		if para = strings.TrimSpace(para); para != "" {
			out = append(out, strings.Join(strings.Fields(para), " "))
		}
	}
	return out
}

func (s *Server) roomStatus(r *Room) views.RoomStatus {
	st := views.RoomStatus{}
	if r.lesson != nil {
		st.LessonStep, st.LessonSteps = r.state.LessonStep, len(r.lesson.Steps)
	}
	if len(r.se.cur.Steps) > 0 {
		step, _ := r.se.cur.Position()
		_, stage := r.se.cur.Current()
		st.Where = fmt.Sprintf("token step %d, stage %s", step+1, label(stage))
	}
	return st
}

// render renders the followers' bytes once. r.mu is held.
func (r *Room) render(s *Server) {
	var buf bytes.Buffer
	ctx := context.Background()
	must := func(c templ.Component) {
		if err := c.Render(ctx, &buf); err != nil {
			s.log.Error("rendering a room", "room", r.code, "err", err)
		}
	}
	must(views.RoomMain(s.roomView(r)))
	st := buf.Len()
	must(views.RoomStatusView(s.roomStatus(r)))
	r.followHTML = bytes.Clone(buf.Bytes()[:st])
	r.follow = prepared(bytes.Clone(buf.Bytes()))
	r.status = prepared(bytes.Clone(buf.Bytes()[st:]))
}

// broadcast sends the current state to every client: followers get the
// view, students exploring get where the class is, instructors their page.
// r.mu is held.
func (s *Server) broadcast(r *Room) {
	r.version++
	r.render(s)
	for c := range r.clients {
		switch {
		case c.instructor:
			c.send(r.follow)
			c.send(prepared(s.teachExtras(r)))
		case c.exploring != nil:
			c.send(r.status)
		default:
			c.send(r.follow)
		}
	}
	// Each student's own answer at this step: rendered once per distinct
	// answer (most students share one, often the empty line).
	mine := map[string]*websocket.PreparedMessage{}
	for c := range r.clients {
		if !c.instructor && c.exploring == nil {
			a := r.answers[r.state.LessonStep][c.student]
			m := mine[a]
			if m == nil {
				m = prepared(s.pollMine(r, c.student))
				mine[a] = m
			}
			c.send(m)
		}
	}
}

// pollMine renders a student's own answer at the room's step and, once
// revealed, how it compares with the engine's. r.mu is held.
func (s *Server) pollMine(r *Room, student string) []byte {
	i := r.state.LessonStep
	a := r.answers[i][student]
	verdict := ""
	if a != "" && r.state.Revealed[i] && r.lesson != nil && r.se.m != nil && len(r.se.cur.Steps) > 0 {
		lq := r.lesson.Steps[i].Question
		want, _ := engineAnswer(r.se, lq)
		if judge(lq.Kind, want, a) {
			verdict = "matches the engine's answer"
		} else {
			verdict = fmt.Sprintf("the engine's answer is %q", want)
		}
	}
	return renderTo(views.PollMine(a, verdict))
}

func renderTo(c templ.Component) []byte {
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		return []byte(`<p class="error">render failed</p>`)
	}
	return buf.Bytes()
}

// teachPage builds the instructor's page model. r.mu is held.
func (s *Server) teachPage(r *Room) views.TeachPage {
	p := s.teachControls(r)
	p.Room, p.Status = s.roomView(r), s.roomStatus(r)
	return p
}

// teachControls is the part of the instructor's page TeachExtras shows
// (without the stage's panel, which every broadcast renders once anyway).
// r.mu is held.
func (s *Server) teachControls(r *Room) views.TeachPage {
	p := views.TeachPage{Code: r.code, IsLesson: r.lesson != nil, PrevStep: -1, NextStep: -1}
	p.Room.Question, _ = s.roomQuestion(r)
	if l := r.lesson; l != nil {
		i := r.state.LessonStep
		if i > 0 {
			p.PrevStep = i - 1
		}
		if i+1 < len(l.Steps) {
			p.NextStep = i + 1
		}
		p.Notes = strings.Join(strings.Fields(l.Steps[i].Notes), " ")
	}
	p.Stats = s.teachStats(r)
	return p
}

func (s *Server) teachStats(r *Room) views.TeachStats {
	var st views.TeachStats
	seen := map[string]bool{}
	following := map[string]bool{}
	for c := range r.clients {
		if c.instructor {
			continue
		}
		seen[c.student] = true
		if c.exploring == nil {
			following[c.student] = true
		}
	}
	st.Connected, st.Following = len(seen), len(following)
	if r.lesson != nil {
		if lq := r.lesson.Steps[r.state.LessonStep].Question; lq != nil {
			st.Question = true
			st.Answered = len(r.answers[r.state.LessonStep])
			if r.se.err == "" && len(r.se.cur.Steps) > 0 {
				st.Live = pollRows(r.se, lq, r.answers[r.state.LessonStep], false)
			}
		}
	}
	return st
}

// teachExtras renders the instructor-only fragment. r.mu is held.
func (s *Server) teachExtras(r *Room) []byte {
	return renderTo(views.TeachExtras(s.teachControls(r)))
}

// teachSoon refreshes the instructors' numbers at most every
// instructorEvery, however fast answers and joins arrive. r.mu is held.
func (s *Server) teachSoon(r *Room) {
	if r.teachDue {
		return
	}
	r.teachDue = true
	time.AfterFunc(instructorEvery, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.teachDue = false
		var msg *websocket.PreparedMessage
		for c := range r.clients {
			if c.instructor {
				if msg == nil {
					msg = prepared(s.teachExtras(r))
				}
				c.send(msg)
			}
		}
	})
}

// closeAll drops every connection (shutdown or expiry); clients reconnect.
func (r *Room) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for c := range r.clients {
		c.kick()
		if b := c.exploring; b != nil {
			b.mu.Lock()
			b.close()
			b.mu.Unlock()
		}
	}
	if r.se != nil {
		r.se.close()
	}
}

// roomIdleUnload is how long a room with no one connected stays in memory
// when the store keeps it (it reloads on the next visit).
const roomIdleUnload = 30 * time.Minute

// sweep ends expired rooms and unloads idle ones; it runs every minute.
func (s *Server) sweep(ctx context.Context, now time.Time) {
	cl := s.class
	cl.mu.Lock()
	var drop []*Room
	for code, r := range cl.rooms {
		r.mu.Lock()
		expired := now.After(r.expires)
		idle := cl.store != nil && len(r.clients) == 0 && now.Sub(r.lastActive) > roomIdleUnload
		r.mu.Unlock()
		if expired || idle {
			delete(cl.rooms, code)
			drop = append(drop, r)
		}
	}
	cl.mu.Unlock()
	for _, r := range drop {
		r.closeAll()
	}
	if cl.store != nil {
		if err := cl.store.DeleteExpired(ctx, now); err != nil {
			s.log.Error("deleting expired rooms", "err", err)
		}
	}
}

// engineAnswer is the engine's answer to a lesson question at the
// session's current step, and the sentence that reveals it.
func engineAnswer(se *Session, lq *lessons.Question) (answer, reveal string) {
	tr, _ := se.cur.Current()
	tk := se.m.Tokenizer
	top := engine.Argmax(tr.Logits.Logits)
	piece := string(tk.Bytes(top))
	switch lq.Kind {
	case "choice":
		return lq.Answer, "The answer: " + lq.Answer
	case "next-token":
		return piece, fmt.Sprintf("The model's most likely next token is %q (id %d).", piece, top)
	case "probability":
		p := sampleProbabilities(tr.Logits.Logits, 1)[top]
		return strconv.FormatFloat(float64(p), 'f', 3, 64), fmt.Sprintf("The engine: %q has probability %.3f at temperature 1.", piece, p)
	case "survivors":
		n := 0
		for _, x := range tr.Sampler {
			if x.Step == "top-p" {
				n = x.AfterCount
			}
		}
		return strconv.Itoa(n), fmt.Sprintf("The engine: %d tokens survive top-p.", n)
	}
	return "", ""
}

// judge says whether a given answer matches the engine's: exact for
// choices, the same token for next-token (leading space optional), within
// 0.1 for probabilities (as 0.42 or 42%).
func judge(kind, answer, given string) bool {
	switch kind {
	case "choice", "survivors":
		return strings.TrimSpace(given) == answer
	case "next-token":
		return given == answer || strings.TrimSpace(given) == strings.TrimSpace(answer)
	case "probability":
		want, err1 := strconv.ParseFloat(answer, 64)
		v, ok := parseProbability(given)
		return err1 == nil && ok && v >= want-0.1 && v <= want+0.1
	}
	return false
}

func parseProbability(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	pc := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
	if err != nil {
		return 0, false
	}
	if pc {
		v /= 100
	}
	return v, v >= 0 && v <= 1
}

// checkAnswer validates a student's answer to lq and returns it in the
// form the poll counts (a choice, a token's text, a number).
func checkAnswer(se *Session, lq *lessons.Question, raw string) (string, error) {
	a := strings.TrimSpace(raw)
	switch {
	case a == "":
		return "", errors.New("type an answer first")
	case len(a) > maxAnswerBytes:
		return "", fmt.Errorf("an answer is at most %d bytes", maxAnswerBytes)
	case !utf8.ValidString(a):
		return "", errors.New("the answer is not valid UTF-8")
	}
	if len(lq.Choices) > 0 {
		if !slices.Contains(lq.Choices, raw) && !slices.Contains(lq.Choices, a) {
			return "", errors.New("that is not one of the choices")
		}
		if slices.Contains(lq.Choices, raw) {
			return raw, nil // choices may start with a space (tokens)
		}
		return a, nil
	}
	switch lq.Kind {
	case "next-token":
		if id, ok := singleToken(se, a); ok {
			return string(se.m.Tokenizer.Bytes(id)), nil
		}
	case "probability":
		v, ok := parseProbability(a)
		if !ok {
			return "", errors.New("give a probability between 0 and 1 (or 0% to 100%)")
		}
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case "survivors":
		n, err := strconv.Atoi(a)
		if err != nil || n < 0 {
			return "", errors.New("give a whole number of tokens")
		}
		return strconv.Itoa(n), nil
	}
	return a, nil
}

// singleToken finds the token a student means by a word: the word with a
// leading space (how words start mid-sentence), else the word itself.
func singleToken(se *Session, word string) (int32, bool) {
	if se.m == nil {
		return 0, false
	}
	for _, w := range []string{" " + word, word} {
		if ids := se.m.Tokenizer.EncodeIDs(w, false); len(ids) == 1 {
			return ids[0], true
		}
	}
	return 0, false
}

// pollRows is the histogram of the class's answers; for next-token
// questions with withModel, the model's top tokens are listed too, each
// with its probability at temperature 1.
func pollRows(se *Session, lq *lessons.Question, answers map[string]string, withModel bool) []views.PollRow {
	key := func(a string) string { return a }
	order := map[string]int{} // rows with a fixed place: choices, probability bins
	for i, c := range lq.Choices {
		order[c] = i + 1
	}
	if lq.Kind == "probability" { // a histogram over ten bins, not one row per number typed
		key = probabilityBin
		for b := range 10 {
			order[binLabel(b)] = b + 1
		}
	}
	counts := map[string]int{}
	for _, a := range answers {
		counts[key(a)]++
	}
	for k := range order {
		if _, ok := counts[k]; !ok {
			counts[k] = 0
		}
	}
	var probs []float32
	correct := ""
	if withModel {
		correct, _ = engineAnswer(se, lq)
		if _, ok := counts[key(correct)]; !ok {
			counts[key(correct)] = 0
		}
		if lq.Kind == "next-token" {
			tr, _ := se.cur.Current()
			probs = sampleProbabilities(tr.Logits.Logits, 1)
			for _, id := range topIDs(probs, 5) {
				if p := string(se.m.Tokenizer.Bytes(id)); counts[p] == 0 {
					counts[p] = 0
				}
			}
		}
	}
	total := len(answers)
	rows := make([]views.PollRow, 0, len(counts))
	for a, n := range counts {
		r := views.PollRow{Answer: a, Count: n}
		if total > 0 {
			r.Share = float64(n) / float64(total)
		}
		if withModel {
			if lq.Kind == "probability" {
				r.Correct = a == key(correct)
			} else {
				r.Correct = judge(lq.Kind, correct, a)
			}
			if probs != nil {
				if ids := se.m.Tokenizer.EncodeIDs(a, false); len(ids) == 1 && string(se.m.Tokenizer.Bytes(ids[0])) == a {
					r.ModelP, r.HasModelP = float64(probs[ids[0]]), true
				}
			}
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if oa, ob := order[a.Answer], order[b.Answer]; oa > 0 || ob > 0 {
			if oa > 0 && ob > 0 {
				return oa < ob
			}
			return oa > 0
		}
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.ModelP != b.ModelP {
			return a.ModelP > b.ModelP
		}
		return a.Answer < b.Answer
	})
	return rows
}

// probabilityBin puts a probability answer in its tenth: "40–50%".
func probabilityBin(a string) string {
	v, ok := parseProbability(a)
	if !ok {
		return a
	}
	return binLabel(min(9, int(v*10)))
}

func binLabel(b int) string { return fmt.Sprintf("%d–%d%%", 10*b, 10*b+10) }

// topIDs returns the ids of the n largest probabilities.
func topIDs(p []float32, n int) []int32 {
	ids := make([]int32, 0, n+1)
	for i, v := range p {
		k := len(ids)
		for k > 0 && p[ids[k-1]] < v {
			k--
		}
		if k < n {
			ids = slices.Insert(ids, k, int32(i))
			if len(ids) > n {
				ids = ids[:n]
			}
		}
	}
	return ids
}

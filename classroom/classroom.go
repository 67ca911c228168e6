// Package classroom runs lessons (or Explorer views) to a room: join
// codes, the instructor's secret, one rendered view broadcast to every
// follower, polls whose histograms sit beside the engine's numbers, a
// student's own branch ("explore on my own") and a store that survives
// restarts. HTTP and the WebSocket upgrade stay in package server; each
// connection is a wsconn.Conn attached to its Room.
//
// Every room's state is owned by one goroutine (see Room); the Classroom's
// lock guards only its map of rooms and the per-address counters, and no
// engine work happens while it is held: after a restart, one room's
// rebuild blocks no other room and no join.
package classroom

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"log/slog"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"stepthrough/lessons"
	"stepthrough/present"
	"stepthrough/session"
	"stepthrough/views"
)

// Limits (Config overrides the first eight).
const (
	DefaultMaxRooms           = 100
	DefaultMaxStudents        = 300 // per room
	DefaultRoomTTL            = 12 * time.Hour
	DefaultRoomsPerClient     = 10
	DefaultLiveRoomsPerClient = 5
	DefaultInstructorGone     = time.Hour
	DefaultStudentsPerAddress = 8
	DefaultRetryEvery         = 5 * time.Second
	JoinFailures              = 20 // unknown codes a client may try per minute
	IdleUnload                = 30 * time.Minute
	instructorEvery           = 150 * time.Millisecond
)

// Errors a classroom answers with; each is a sentence for the user.
var (
	ErrRoomGone     = errors.New("this room has ended or never existed: check the code")
	ErrRoomsFull    = errors.New("the server has as many rooms as it can hold: try again later")
	ErrRoomLimit    = errors.New("you have started too many rooms in the last hour")
	ErrLiveRooms    = errors.New("you already have as many open rooms as one address may: end one (the rooms this browser started are listed below, each with an End button; a room's instructor page has one too) or wait for it to expire")
	ErrTooManyTries = errors.New("too many wrong codes: wait a minute and try again")
	ErrRoomFull     = errors.New("this room is full")
	ErrJoinsTooFast = errors.New("too many connections to this room in the last minute: try again shortly")
	ErrStore        = errors.New("the classroom store failed (the server's log says why): try again later")
)

// Limits bound a server's rooms, each zero field its default: declared
// here once, embedded in Config and in server.Config, and set from serve's
// flags.
type Limits struct {
	MaxRooms       int           // live rooms (default 100)
	MaxStudents    int           // connected student tabs per room (default 300)
	RoomTTL        time.Duration // a room expires this long after the instructor's last action (default 12 h)
	RoomsPerClient int           // rooms one address may start per hour (default 10)
	// LiveRoomsPerClient is how many unexpired rooms one address may hold
	// (default 5): a few addresses cannot fill MaxRooms.
	LiveRoomsPerClient int
	// InstructorGone ends a room this long after its last instructor page
	// closed, or after it started if none ever opened (default 1 h).
	InstructorGone time.Duration
	// StudentsPerAddress is how many student ids from one address may
	// answer a room's polls (default 8): clearing cookies does not buy
	// more votes. Raise it when a class reaches the server through one
	// shared address.
	StudentsPerAddress int
}

// Config configures a Classroom.
type Config struct {
	// OnBroadcast, when set, is told how long each broadcast took to
	// render a room's view and queue it for every client, and to how many
	// (from the room's goroutine: it must not block).
	OnBroadcast func(d time.Duration, clients int)
	// beforeRender, set by tests, sees each state before its view is
	// drawn (a panic there is a view that cannot be drawn).
	beforeRender func(State)
	Limits
	// RetryEvery is how often a room retries writes the store refused
	// (default 5 s).
	RetryEvery time.Duration
	Store      Store // nil: rooms live in memory only (a restart ends them)
	// Bus, when set, carries each room's changes to the other servers
	// sharing Store; ServerID names this server on it. FollowEvery is how
	// often the server reads its rooms' versions from the store (default
	// 2 s; Follow runs it).
	Bus         Bus
	ServerID    string
	FollowEvery time.Duration
	Engines     session.Engines
	// Sessions admits students' own branches ("explore on my own") by the
	// same limits as Explorer tabs; nil: a pool of its own.
	Sessions *session.Pool
	Lessons  map[string]*lessons.Lesson
	Log      *slog.Logger
}

// Classroom holds the live rooms.
type Classroom struct {
	cfg   Config
	store Store
	log   *slog.Logger

	mu       sync.Mutex
	rooms    map[string]*Room
	creators map[string][]time.Time // rooms created per client address, last hour
	failures map[string][]time.Time // unknown codes tried per client, last minute
	closed   bool                   // shutting down: no new rooms or loads

	counts       counters    // for Stats
	marksFailing atomic.Bool // the last read of the rooms' versions failed
}

// New makes a classroom.
func New(cfg Config) *Classroom {
	cfg.MaxRooms = cmp.Or(cfg.MaxRooms, DefaultMaxRooms)
	cfg.MaxStudents = cmp.Or(cfg.MaxStudents, DefaultMaxStudents)
	cfg.RoomTTL = cmp.Or(cfg.RoomTTL, DefaultRoomTTL)
	cfg.RoomsPerClient = cmp.Or(cfg.RoomsPerClient, DefaultRoomsPerClient)
	cfg.LiveRoomsPerClient = cmp.Or(cfg.LiveRoomsPerClient, DefaultLiveRoomsPerClient)
	cfg.InstructorGone = cmp.Or(cfg.InstructorGone, DefaultInstructorGone)
	cfg.StudentsPerAddress = cmp.Or(cfg.StudentsPerAddress, DefaultStudentsPerAddress)
	cfg.RetryEvery = cmp.Or(cfg.RetryEvery, DefaultRetryEvery)
	cfg.FollowEvery = cmp.Or(cfg.FollowEvery, DefaultFollowEvery)
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Sessions == nil {
		cfg.Sessions = session.NewPool(cfg.Engines, session.PoolConfig{})
	}
	return &Classroom{cfg: cfg, store: cfg.Store, log: cfg.Log, rooms: map[string]*Room{},
		creators: map[string][]time.Time{}, failures: map[string][]time.Time{}}
}

// InstructorGone is how long a room outlives its instructor's page.
func (cl *Classroom) InstructorGone() time.Duration { return cl.cfg.InstructorGone }

// Store is the classroom's store (nil when rooms live in memory only).
func (cl *Classroom) Store() Store { return cl.store }

// Len counts the rooms in memory.
func (cl *Classroom) Len() int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return len(cl.rooms)
}

// Create starts a room from a lesson (by name) or from an Explorer link's
// query, for a client address within its limits, and returns it with its
// instructor secret.
func (cl *Classroom) Create(ctx context.Context, client, lessonName string, explorer url.Values) (*Room, string, error) {
	r, secret, err := cl.reserve(ctx, client, time.Now())
	if err != nil {
		return nil, "", err
	}
	go r.run(func(ctx context.Context) error { return r.create(ctx, lessonName, explorer) })
	<-r.ready
	if r.err != nil {
		cl.forget(r)
		return nil, "", r.err
	}
	cl.log.Info("room started", "room", r.code, "lesson", lessonName, "client", client)
	return r, secret, nil
}

// reserve checks a client's limits and the server's, then takes a fresh
// code for a new room (held while the room starts).
func (cl *Classroom) reserve(ctx context.Context, client string, now time.Time) (*Room, string, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.closed {
		return nil, "", ErrRoomsFull
	}
	recent := slices.DeleteFunc(cl.creators[client], func(t time.Time) bool { return now.Sub(t) > time.Hour })
	if len(recent) >= cl.cfg.RoomsPerClient {
		return nil, "", ErrRoomLimit
	}
	live, mine := len(cl.rooms), 0
	for _, r := range cl.rooms {
		if r.creator == client && !r.ended() && now.Before(r.expiry()) {
			mine++
		}
	}
	if cl.store != nil {
		if all, stored, err := cl.store.CountRooms(ctx, now, client); err == nil {
			live, mine = max(live, all), max(mine, stored)
		}
	}
	if mine >= cl.cfg.LiveRoomsPerClient {
		return nil, "", ErrLiveRooms
	}
	if live >= cl.cfg.MaxRooms {
		return nil, "", ErrRoomsFull
	}
	code := newCode()
	for cl.rooms[code] != nil {
		code = newCode()
	}
	cl.creators[client] = append(recent, now)
	secret := newSecret()
	r := cl.newRoom(code)
	r.secretHash, r.created, r.creator = hashSecret(secret), now, client
	r.setExpiry(now.Add(cl.cfg.InstructorGone)) // until its instructor's page opens
	cl.rooms[code] = r
	return r, secret, nil
}

// forget removes r from the map (if it is still there).
func (cl *Classroom) forget(r *Room) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.rooms[r.code] == r {
		delete(cl.rooms, r.code)
	}
}

// Lookup finds a live room by its (normalized) code, loading it from the
// store after a restart; the load runs on the room's own goroutine.
func (cl *Classroom) Lookup(ctx context.Context, code string) (*Room, error) {
	r, gone, err := cl.find(code)
	if gone != nil {
		gone.shutdown()
	}
	if err != nil {
		return nil, err
	}
	select {
	case <-r.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if r.err != nil {
		cl.forget(r)
		return nil, ErrRoomGone
	}
	return r, nil
}

// find looks a code up in the map: a live room, an expired one to drop
// (gone), or a new room loading from the store on its own goroutine.
func (cl *Classroom) find(code string) (r, gone *Room, err error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.closed {
		return nil, nil, ErrRoomGone
	}
	r = cl.rooms[code]
	if r != nil && r.isReady() && (r.ended() || time.Now().After(r.expiry())) {
		delete(cl.rooms, code)
		return nil, r, ErrRoomGone
	}
	if r == nil {
		if cl.store == nil {
			return nil, nil, ErrRoomGone
		}
		r = cl.newRoom(code)
		cl.rooms[code] = r
		go r.run(r.load)
	}
	return r, nil, nil
}

// AllowJoin counts an unknown code against a client (when failed); false
// when the client has tried too many in the last minute.
func (cl *Classroom) AllowJoin(client string, failed bool) bool {
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
	return len(f) < JoinFailures
}

// Sweep ends expired rooms and unloads idle ones (no one connected for
// IdleUnload, when the store keeps them); the server runs it every minute.
func (cl *Classroom) Sweep(ctx context.Context, now time.Time) {
	for _, r := range cl.sweepable(now) {
		r.shutdown()
	}
	if cl.store != nil {
		if err := cl.store.DeleteExpired(ctx, now); err != nil {
			cl.log.Error("deleting expired rooms", "err", err)
		}
	}
}

// sweepable takes the expired and idle rooms out of the map.
func (cl *Classroom) sweepable(now time.Time) []*Room {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	var drop []*Room
	for code, r := range cl.rooms {
		if !r.isReady() {
			continue
		}
		expired := r.ended() || now.After(r.expiry())
		idle := cl.store != nil && r.nclients.Load() == 0 && now.Sub(r.idleSince()) > IdleUnload && !r.dirty.Load()
		if expired || idle {
			delete(cl.rooms, code)
			drop = append(drop, r)
		}
	}
	return drop
}

// Close drops every room connection (clients reconnect to the next
// server), releases the engine sessions and closes the store.
func (cl *Classroom) Close() {
	rooms, already := cl.takeAll()
	for _, r := range rooms {
		r.shutdown()
	}
	deadline := time.After(5 * time.Second) // one deadline for all: shutdown always ends
	for _, r := range rooms {
		select {
		case <-r.quit:
		case <-deadline:
			cl.log.Error("rooms did not stop within 5 s; closing anyway", "room", r.code)
			return
		}
	}
	if cl.store != nil && !already {
		cl.store.Close()
	}
}

// takeAll empties the map for good (shutdown).
func (cl *Classroom) takeAll() (rooms []*Room, already bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for _, r := range cl.rooms {
		rooms = append(rooms, r)
	}
	cl.rooms = map[string]*Room{}
	already, cl.closed = cl.closed, true
	return rooms, already
}

// StudentPage is a student's page of the room as it is now.
func (r *Room) StudentPage(ctx context.Context) (views.StudentPage, error) {
	var p views.StudentPage
	err := r.do(ctx, func() {
		p = views.StudentPage{Code: r.code, Room: r.view(), Status: r.statusView()}
	})
	return p, err
}

// Teach is what the instructor's page shows: its controls and views,
// and the settings of a room started from the
// Explorer (nil for a lesson room).
type Teach struct {
	Page     views.TeachPage
	Settings *views.Settings
}

// TeachPage builds the instructor's page model.
func (r *Room) TeachPage(ctx context.Context) (Teach, error) {
	var t Teach
	err := r.do(ctx, func() {
		t.Page = r.teachControls()
		t.Page.Room, t.Page.Status = r.view(), r.statusView()
		if r.lesson == nil {
			f := present.Form(r.state.Run)
			t.Settings = &f
		}
	})
	return t, err
}

// CSV exports every answer given in the room: lesson step, question,
// anonymous student number, answer, the engine's answer (once revealed)
// and whether it matched. Steps the room has left are replayed in a
// scratch session for their engine answer.
func (r *Room) CSV(ctx context.Context) ([]byte, error) {
	var answers map[int]map[string]string
	var revealed map[int]bool
	var current int
	var currentAnswer string
	err := r.do(ctx, func() {
		answers, revealed = map[int]map[string]string{}, map[int]bool{}
		for i, m := range r.answers {
			answers[i] = map[string]string{}
			for k, v := range m {
				answers[i][k] = v
			}
		}
		for i, v := range r.state.Revealed {
			revealed[i] = v
		}
		current = r.state.LessonStep
		if st, tk, ok := r.se.Current(); ok && r.lesson != nil && r.lesson.Steps[current].Question != nil {
			currentAnswer, _ = lessons.EngineAnswer(st, tk, r.lesson.Steps[current].Question)
		}
	})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{"lesson_step", "question", "student", "answer", "engine_answer", "correct"})
	steps := make([]int, 0, len(answers))
	for k := range answers {
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
		if lq != nil && revealed[i] {
			engineAns = currentAnswer
			if i != current {
				engineAns = r.engineAnswerAt(ctx, i)
			}
		}
		ids := make([]string, 0, len(answers[i]))
		for id := range answers[i] {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			if _, ok := students[id]; !ok {
				students[id] = len(students) + 1
			}
			a := answers[i][id]
			text, correct := "", ""
			if lq != nil {
				text = lq.Text
			}
			if engineAns != "" {
				correct = strconv.FormatBool(lessons.Judge(lq.Kind, engineAns, a))
			}
			w.Write([]string{strconv.Itoa(i + 1), text, "student " + strconv.Itoa(students[id]), csvSafe(lessons.Shown(a)), csvSafe(lessons.Shown(engineAns)), correct})
		}
	}
	w.Flush()
	return buf.Bytes(), nil
}

// csvSafe keeps a spreadsheet from reading an answer as a formula.
func csvSafe(s string) string {
	if s != "" && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@') {
		return "'" + s
	}
	return s
}

// engineAnswerAt replays lesson step i in a scratch session for its
// engine answer.
func (r *Room) engineAnswerAt(ctx context.Context, i int) string {
	se := session.New("scratch", "", r.cl.cfg.Engines)
	defer se.Close()
	if se.PlayLesson(ctx, r.lesson, i) != nil {
		return ""
	}
	st, tk, ok := se.Current()
	if !ok {
		return ""
	}
	a, _ := lessons.EngineAnswer(st, tk, r.lesson.Steps[i].Question)
	return a
}

// Summary is what the Classroom page lists about a room its browser
// started: which lesson, how far it got, who is connected, until when.
type Summary struct {
	Code, Title        string
	LessonStep, Steps  int // 0-based step; Steps is 0 for a room from the Explorer
	Students, Teachers int
	Expires            time.Time
}

// Summary describes the room as it is now.
func (r *Room) Summary(ctx context.Context) (Summary, error) {
	var s Summary
	err := r.do(ctx, func() {
		s = Summary{Code: r.code, Title: "a room from the Explorer", Students: r.students(), Teachers: r.instructors(), Expires: r.expiry()}
		if r.lesson != nil {
			s.Title, s.LessonStep, s.Steps = r.lesson.Title, r.state.LessonStep, len(r.lesson.Steps)
		}
	})
	return s, err
}

// End ends the room for everyone, as the End button on its instructor's
// page does (for an instructor whose page is closed).
func (r *Room) End(ctx context.Context) error {
	return r.do(ctx, func() {
		if !r.closed {
			r.end(ctx)
		}
	})
}

// Package server is Stepthrough's web server: echo routes, one WebSocket
// per browser tab (one reader and one writer goroutine), and a session per
// tab that owns its engine state.
//
// # WebSocket protocol
//
// The page connects to /ws?sid=ID. The htmx ws extension sends each
// control's values as one JSON object ({"action": "step", ...form fields,
// "HEADERS": {...}}); the server validates it (size, action name, every
// field), applies it to the session and answers with the re-rendered
// #explorer fragment, which htmx swaps in by id. Actions: run (with the
// settings form), step, back, next-token, end, reset, temperature
// (view_temperature), view (layer, head, scores). A malformed or oversized
// message is answered with an error shown in the page; the session is
// unchanged.
//
// # Limits
//
// Sessions are evicted after IdleTimeout; there are at most MaxSessions in
// total and MaxPerClient per client address (a client over its limit gives
// up its least recently used session); a connection may send at most
// msgRate messages per second; the Origin header must match the host.
package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"stepthrough/lessons"
	"stepthrough/static"
	"stepthrough/views"
)

// Config configures a Server.
type Config struct {
	Addr         string
	ModelsDirs   []string
	Embedded     map[string][]byte // models compiled into the binary, by file name
	IdleTimeout  time.Duration
	MaxSessions  int
	MaxPerClient int
	Logger       *slog.Logger

	// Classrooms. DataDir holds rooms.db (SQLite); empty keeps rooms in
	// memory only (a restart ends them).
	DataDir        string
	MaxRooms       int           // live rooms on the server (default 100)
	MaxStudents    int           // connected student tabs per room (default 300)
	RoomTTL        time.Duration // a room expires this long after the instructor's last action (default 12 h)
	RoomsPerClient int           // rooms one address may start per hour (default 10)
}

// Server serves the Explorer.
type Server struct {
	cfg      Config
	reg      *Registry
	echo     *echo.Echo
	log      *slog.Logger
	mu       sync.Mutex
	sessions map[string]*Session
	compares compareCache
	lessons  map[string]*lessons.Lesson
	class    *classroom
}

// New builds a server over the models found in cfg.ModelsDirs. It fails
// only when cfg.DataDir is set and its database cannot be opened.
func New(cfg Config) (*Server, error) {
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 30 * time.Minute
	}
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = 200
	}
	if cfg.MaxPerClient == 0 {
		cfg.MaxPerClient = 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.MaxRooms = cmp.Or(cfg.MaxRooms, defaultMaxRooms)
	cfg.MaxStudents = cmp.Or(cfg.MaxStudents, defaultMaxStudents)
	cfg.RoomTTL = cmp.Or(cfg.RoomTTL, defaultRoomTTL)
	cfg.RoomsPerClient = cmp.Or(cfg.RoomsPerClient, defaultRoomsPerClient)
	s := &Server{cfg: cfg, reg: NewRegistry(cfg.ModelsDirs), log: cfg.Logger, sessions: map[string]*Session{},
		class: &classroom{rooms: map[string]*Room{}, creators: map[string][]time.Time{}, failures: map[string][]time.Time{}}}
	if cfg.DataDir != "" {
		st, err := OpenStore(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		s.class.store = st
	}
	for name, data := range cfg.Embedded {
		s.reg.AddEmbedded(name, data)
	}
	var err error
	if s.lessons, err = lessons.Builtin(); err != nil {
		s.log.Error("built-in lessons failed to parse", "err", err) // a test keeps them valid
		s.lessons = map[string]*lessons.Lesson{}
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/", s.index)
	e.GET("/ws", s.ws)
	e.GET("/compare", s.comparePage)
	e.GET("/lessons", s.lessonList)
	e.GET("/lessons/:name", s.lessonStep)
	e.GET("/compare.json", s.compareExport("json"))
	e.GET("/compare.csv", s.compareExport("csv"))
	s.classroomRoutes(e)
	e.GET("/export.svg", s.exportSVG)
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", http.FileServer(http.FS(static.FS)))))
	s.echo = e
	return s, nil
}

// Close releases what New opened without Run (tests): the rooms' engine
// sessions and the database.
func (s *Server) Close() { s.class.closeRooms() }

// Handler is the server's HTTP handler (for tests).
func (s *Server) Handler() http.Handler { return s.echo }

// Models lists the offered model files.
func (s *Server) Models() []string { return s.reg.Names() }

// Run serves until ctx is done, then shuts down gracefully.
func (s *Server) Run(ctx context.Context, ready func(addr string)) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.echo, ReadHeaderTimeout: 10 * time.Second}
	go s.evictLoop(ctx)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.class.closeRooms() // room clients are told to reconnect (close code 1012)
	err = srv.Shutdown(sctx)
	s.mu.Lock()
	for id, se := range s.sessions {
		se.mu.Lock()
		se.close()
		se.mu.Unlock()
		delete(s.sessions, id)
	}
	s.mu.Unlock()
	s.reg.Close()
	return err
}

func (s *Server) evictLoop(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.evict(time.Now())
			s.sweep(ctx, time.Now())
		}
	}
}

func (s *Server) evict(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, se := range s.sessions {
		if se.mu.TryLock() {
			if now.Sub(se.lastUsed) > s.cfg.IdleTimeout {
				se.close()
				delete(s.sessions, id)
			}
			se.mu.Unlock()
		}
	}
}

var errTooMany = errors.New("too many sessions: try again later")

// newSession registers a session for a client, within the limits. A
// client at its limit (reloaded tabs leave sessions behind) gives up its
// least recently used session; when the server is full, a session idle for
// a minute is evicted, else the request is refused.
func (s *Server) newSession(client string) (*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var mine []*Session
	for _, se := range s.sessions {
		if se.client == client {
			mine = append(mine, se)
		}
	}
	if len(mine) >= s.cfg.MaxPerClient {
		s.dropLRU(mine, 0)
	}
	if len(s.sessions) >= s.cfg.MaxSessions {
		all := make([]*Session, 0, len(s.sessions))
		for _, se := range s.sessions {
			all = append(all, se)
		}
		if !s.dropLRU(all, time.Minute) {
			return nil, errTooMany
		}
	}
	var b [12]byte
	rand.Read(b[:])
	se := newSession(hex.EncodeToString(b[:]), client, s.reg)
	s.sessions[se.id] = se
	return se, nil
}

// dropLRU closes the least recently used of list if it has been idle at
// least minIdle and no action holds it. s.mu is held.
func (s *Server) dropLRU(list []*Session, minIdle time.Duration) bool {
	var lru *Session
	for _, se := range list {
		if lru == nil || se.lastUsed.Before(lru.lastUsed) {
			lru = se
		}
	}
	if lru == nil || time.Since(lru.lastUsed) < minIdle || !lru.mu.TryLock() {
		return false
	}
	lru.close()
	lru.mu.Unlock()
	delete(s.sessions, lru.id)
	return true
}

func (s *Server) session(id string) *Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

func clientOf(c echo.Context) string { return c.RealIP() }

// index renders the Explorer. Query parameters (prompt, model, backend,
// sampler settings, seed, step, stage) open it in that state.
func (s *Server) index(c echo.Context) error {
	se, err := s.newSession(clientOf(c))
	if err != nil {
		return c.String(http.StatusServiceUnavailable, err.Error())
	}
	se.mu.Lock()
	defer se.mu.Unlock()
	q := c.QueryParams()
	if q.Get("prompt") != "" {
		se.open(c.Request().Context(), getter(q))
	} else if len(s.reg.Names()) == 0 {
		se.err = "no models found: put a .gguf file in models/ or start with serve --models-dir DIR"
	}
	page := views.Page{Models: s.reg.Names(), Settings: se.settings, AssetsMissing: static.Missing(), SessionID: se.id, Explorer: se.explorer()}
	var buf bytes.Buffer
	if err := views.ExplorerPage(page).Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	return c.HTMLBlob(http.StatusOK, buf.Bytes())
}

var _ fs.FS = static.FS

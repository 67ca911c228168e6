// Package server is Stepthrough's web server: HTTP routes and page
// handlers, and the WebSocket upgrade (package wsconn) for the Explorer's
// tabs and classroom rooms. What it serves lives below it: one viewer's
// run in package session, rooms in package classroom, pages in views.
//
// # WebSocket protocol
//
// The Explorer page connects to /ws?sid=ID. The htmx ws extension sends
// each control's values as one JSON object ({"action": "step", ...form
// fields, "HEADERS": {...}}); the server validates it (size, rate, action
// name), applies it to the tab's session and answers with the re-rendered
// #explorer fragment, which htmx swaps in by id. Actions: run (with the
// settings form), step, back, next-token, end, reset, temperature
// (view_temperature), view (layer, head, scores). A bad setting is shown
// in the page with the session unchanged; a malformed, unknown, oversized
// or rate-limited message is answered with a short note in #explorer-note
// (an oversized one also closes the connection with 1009).
//
// # Limits
//
// Sessions are evicted after IdleTimeout; there are at most MaxSessions in
// total and MaxPerClient per client address (a client over its limit gives
// up its least recently used session); a connection may send at most 30
// messages per second of at most 16 KiB; the Origin header must match the
// host.
package server

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"stepthrough/classroom"
	"stepthrough/hfhub"
	"stepthrough/lessons"
	"stepthrough/present"
	"stepthrough/registry"
	"stepthrough/session"
	"stepthrough/spec"
	"stepthrough/static"
	"stepthrough/views"
	"stepthrough/wsconn"
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

	// Classrooms. DataDir holds rooms.bolt (bbolt); empty keeps rooms in
	// memory only (a restart ends them). StoreURL (postgres://…) keeps
	// them in PostgreSQL instead, which several servers may share.
	DataDir  string
	StoreURL string
	// BusURL (nats://…) carries each room's changes to the other servers
	// sharing StoreURL at once; without it they notice within 2 s. BusAuth
	// are the credentials the NATS server asks for.
	BusURL  string
	BusAuth classroom.BusAuth
	// the rooms' limits (rooms, students, expiry, per address)
	classroom.Limits
	// MemoryBudget is the bytes of KV cache and trace all viewers' runs
	// may hold together (estimated per run; a run over it is told the
	// server is busy); 0: 4 GiB.
	MemoryBudget int64
	// WorkBudget is the multiply-adds one request's engine work (/patching,
	// Compare, an Explorer run's logit lens) may be estimated to take
	// before it starts: more is refused with the estimate (0: 100 G, a few
	// seconds of a core). WorkTimeout stops one-off work and an Explorer
	// action still computing after it, freeing its slot (0: 30 s).
	WorkBudget  int64
	WorkTimeout time.Duration
	// WorkSlots is how many requests' engine work runs at once (0: one
	// per core, at least 2); SlotsPerAddress is how many of them one
	// address may hold, its other requests waiting their turn (0: half).
	WorkSlots, SlotsPerAddress int

	// AllowedHosts are the Host names the server answers to (DNS
	// rebinding); empty: the listen address's host and localhost (every
	// host when listening on all interfaces).
	AllowedHosts []string
	// TrustedProxies are the proxies whose X-Forwarded-For is believed;
	// empty: the client is the socket's peer.
	TrustedProxies []*net.IPNet
	// TLSCert and TLSKey serve HTTPS (cookies then carry Secure).
	TLSCert, TLSKey string
	// API configures the OpenAI-compatible API (/v1/...).
	API APIConfig
	// PongWait is how long a WebSocket client may leave a ping
	// unanswered before it is dropped (0: wsconn.DefaultPongWait).
	PongWait time.Duration
	// ModelFiles are more model files offered by a name of their own
	// (the Hugging Face cache's ORG/REPO:QUANT → its snapshot's file).
	ModelFiles map[string]string
	// Hub pulls models from the Hugging Face Hub into its cache for the
	// Models page (/models); nil: the page lists the models and pulls
	// none. Its cache's models are the ones ModelFiles names.
	Hub *hfhub.Client
}

// Server serves the Explorer, Compare, the lessons and the classroom.
type Server struct {
	cfg      Config
	reg      *registry.Registry
	echo     *echo.Echo
	log      *slog.Logger
	sessions *session.Pool // Explorer tabs and students' branches
	compares compareCache
	work     *workSlots    // slots for engine work (Explorer runs, exports, lesson pages, Compare), shared fairly by address
	apiSlots chan struct{} // API requests generating or queued
	apiBatch apiBatches    // the API's continuous batch per model
	metrics  metrics       // /metrics
	watched  watchList     // the last API requests, for "Watch this request"
	started  time.Time
	lessons  map[string]*lessons.Lesson
	pulls    pulls // the Models page's pulls from the Hugging Face Hub
	class    *classroom.Classroom
	base     context.Context // done when the server shuts down: connections end
	stop     context.CancelFunc
	// batches is the API batches' context: it ends after base, once the
	// requests in flight when a shutdown began have finished (a drain).
	batches     context.Context
	stopBatches context.CancelFunc
	hosts       map[string]bool // nil: any host
	secret      []byte          // signs student cookies
	bus         *classroom.NATS // nil: no bus
	id          string          // this server's name on the bus
	serving     servingRuns     // the serving floor's load runs
	streams     streamLimits    // open event streams
}

// New builds a server over the models found in cfg.ModelsDirs, the
// embedded ones and cfg.ModelFiles. It fails only when its classroom
// store (cfg.StoreURL, or cfg.DataDir's bbolt file) or the cookie-signing
// secret cannot be opened.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.WorkBudget == 0 {
		cfg.WorkBudget = defaultWorkBudget
	}
	if cfg.WorkTimeout == 0 {
		cfg.WorkTimeout = defaultWorkTimeout
	}
	s := &Server{cfg: cfg, reg: registry.New(cfg.ModelsDirs), log: cfg.Logger, work: newWorkSlots(cmp.Or(cfg.WorkSlots, max(2, runtime.NumCPU())), cfg.SlotsPerAddress)}
	if cfg.BusURL != "" { // one of several servers: every line of its log says which
		s.id = serverID()
		s.log = s.log.With("server", s.id)
		cfg.Logger = s.log
	}
	s.sessions = session.NewPool(s.reg, session.PoolConfig{MaxSessions: cfg.MaxSessions, MaxPerClient: cfg.MaxPerClient,
		IdleTimeout: cfg.IdleTimeout, MemoryBudget: cfg.MemoryBudget, WorkBudget: cfg.WorkBudget})
	s.base, s.stop = context.WithCancel(context.Background())
	s.batches, s.stopBatches = context.WithCancel(context.Background())
	store, err := openStore(cfg)
	if err != nil {
		return nil, err
	}
	if s.secret, err = serverSecret(store, cfg.DataDir); err != nil {
		if store != nil {
			store.Close()
		}
		return nil, err
	}
	for name, data := range cfg.Embedded {
		s.reg.AddEmbedded(name, data)
	}
	for name, path := range cfg.ModelFiles {
		s.reg.AddFile(name, path)
	}
	if s.lessons, err = lessons.Builtin(); err != nil {
		s.log.Error("built-in lessons failed to parse", "err", err) // a test keeps them valid
		s.lessons = map[string]*lessons.Lesson{}
	}
	ccfg := classroom.Config{Limits: cfg.Limits, Engines: s.reg, Sessions: s.sessions, Lessons: s.lessons, Log: s.log}
	s.metricsInit()
	ccfg.OnBroadcast = s.metrics.observeBroadcast
	ccfg.Store = store
	if s.bus, err = openBus(cfg, store); err != nil {
		if store != nil {
			store.Close()
		}
		return nil, err
	}
	if s.bus != nil {
		ccfg.Bus, ccfg.ServerID = s.bus, s.id
	}
	s.class = classroom.New(ccfg)
	if s.bus != nil {
		if err := s.bus.Subscribe(s.class.Receive); err != nil {
			s.bus.Close()
			s.class.Close()
			return nil, fmt.Errorf("bus: %w", err)
		}
	}
	if cfg.StoreURL != "" { // shared: follow what other servers change
		go s.class.Follow(s.base)
	}
	s.hosts = hostSet(cfg.Addr, cfg.AllowedHosts)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.IPExtractor = ipExtractor(cfg.TrustedProxies)
	e.Pre(literalSemicolons)
	e.Use(s.requestID, s.recoverPanics, s.secureHeaders, bodyLimit(apiPath))
	if s.hosts != nil {
		e.Use(s.allowedHosts)
	}
	e.GET("/", s.index)
	e.GET("/ws", s.ws)
	e.GET("/compare", s.comparePage)
	e.GET("/lessons", s.lessonList)
	e.GET("/lessons/:name", s.lessonStep)
	e.GET("/lessons/:name/:n", s.lessonStep)
	e.GET("/compare.json", s.compareExport("json"))
	e.GET("/compare.csv", s.compareExport("csv"))
	s.classroomRoutes(e)
	e.GET("/export.svg", s.exportSVG)
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", s.metricsPage)
	// the scripts and styles a phone loads first, gzipped: about a third as many bytes
	e.GET("/static/*", echo.WrapHandler(staticFiles()), staticGzip)
	e.GET("/favicon.ico", func(c echo.Context) error { // browsers ask for it before they read the page's icon link
		return c.Redirect(http.StatusMovedPermanently, "/static/favicon.svg")
	})
	s.apiRoutes(e)
	s.requestRoutes(e)
	e.GET("/agent", s.agentPage)
	e.GET("/quantization", s.quantPage)
	e.GET("/families", s.familiesPage)
	e.GET("/patching", s.patchingPage)
	e.GET("/memory", s.memoryPage)
	s.modelsRoutes(e)
	s.servingRoutes(e)
	s.started = time.Now()
	s.echo = e
	return s, nil
}

// recoverPanics turns a handler's panic into a logged error (with the
// stack) and a 500, so one bad request cannot take the server down.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if p := recover(); p != nil {
				s.reqLog(c).Error("panic in a handler", "path", c.Request().URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				err = echo.NewHTTPError(http.StatusInternalServerError, "the server failed on this request")
			}
		}()
		return next(c)
	}
}

// Close releases what New opened without Run (tests): the rooms, their
// engine sessions and the database, and every connection.
func (s *Server) Close() {
	s.stop()
	s.pulls.cancelAll()
	s.class.Close()
	s.stopBatches()
	if s.bus != nil {
		s.bus.Close()
	}
}

// Handler is the server's HTTP handler (for tests).
func (s *Server) Handler() http.Handler { return s.echo }

// Models lists the offered model files.
func (s *Server) Models() []string { return s.reg.Names() }

// Run serves until ctx is done, then shuts down within 5 s.
func (s *Server) Run(ctx context.Context, ready func(addr string)) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	// slow clients cannot hold connections open: headers within 10 s, a
	// request within 30 s, an idle keep-alive 2 min (WebSockets set their
	// own deadlines once upgraded)
	srv := &http.Server{Handler: s.echo, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	go s.evictLoop(ctx)
	errc := make(chan error, 1)
	go func() {
		if s.cfg.TLSCert != "" {
			errc <- srv.ServeTLS(ln, s.cfg.TLSCert, s.cfg.TLSKey)
			return
		}
		errc <- srv.Serve(ln)
	}()
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// A drain: /readyz says so and WebSocket clients are told to
	// reconnect (close code 1012: a load balancer sends them to another
	// server); no new connection is accepted, and the HTTP requests in
	// flight (API streams among them, their batch still running) finish
	// within the deadline.
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.stop()
	s.class.Close()
	err = srv.Shutdown(sctx)
	if err != nil {
		srv.Close() // past the deadline: drop what is left
	}
	s.stopBatches()
	if s.bus != nil {
		s.bus.Close()
	}
	s.sessions.CloseAll()
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
			s.class.Sweep(ctx, time.Now())
		}
	}
}

func (s *Server) evict(now time.Time) { s.sessions.Evict(now) }

func clientOf(c echo.Context) string { return c.RealIP() }

// index renders the Explorer. Query parameters (prompt, model, backend,
// sampler settings, seed, step, stage, head) open it in that state.
// staticGzip compresses a static file of at least 1 KB for a browser
// that takes gzip.
var staticGzip = middleware.GzipWithConfig(middleware.GzipConfig{Level: 6, MinLength: 1 << 10})

func (s *Server) index(c echo.Context) error {
	se, err := s.sessions.New(clientOf(c))
	if err != nil {
		return c.String(http.StatusServiceUnavailable, err.Error())
	}
	q := c.QueryParams()
	var runErr error
	var typed map[string]string // a refused value, back in its box
	settings := se.Settings()
	if q.Get("prompt") != "" {
		if run, err := spec.FromQuery(q, settings); err != nil {
			runErr = err
			settings = spec.Keeping(spec.QueryGetter(q), settings) // the form keeps what the viewer asked for
			typed = refusedField(err, q)
		} else if runErr = s.withWork(c, func(ctx context.Context) error { return se.Open(ctx, run) }); runErr != nil {
			settings = run // the viewer's settings, to fix and run again
		} else {
			settings = se.Settings()
		}
	} else if len(s.reg.Names()) == 0 {
		runErr = errors.New("no models found: put a .gguf file in models/ or start with serve --models-dir DIR")
	} else if m := q.Get("model"); m != "" { // a model's link (the Models page's): chosen in the form, run when the viewer writes a prompt
		if !slices.Contains(s.reg.Names(), m) {
			runErr = fmt.Errorf("no model %q is offered here: choose one from the list", truncate(m, 80))
		} else {
			settings.Model = m
		}
	}
	status := http.StatusOK
	if runErr != nil {
		status = http.StatusBadRequest // the page still shows, with the error in it
		if _, ok := runErr.(*echo.HTTPError); ok {
			// no work slot came: the page says so, the session is as it was
			var msg string
			status, msg = workError(runErr)
			runErr = errors.New(msg)
		}
		if errors.Is(runErr, session.ErrBusy) {
			status = http.StatusServiceUnavailable
		}
	}
	page := present.Page(se, settings, s.reg.Names(), s.reg.Label, runErr)
	if typed != nil {
		page.Settings = present.FormShowing(settings, typed)
	}
	page.AssetsMissing = static.Missing()
	return renderPageStatus(c, status, views.ExplorerPage(page))
}

// refusedField is the query's value of the setting err refuses, by its
// form key ("max tokens" is max_tokens, "top-p" top_p); nil when err
// names none the query gave.
func refusedField(err error, q url.Values) map[string]string {
	var pe *spec.Error
	if !errors.As(err, &pe) {
		return nil
	}
	key := strings.NewReplacer(" ", "_", "-", "_").Replace(pe.Param)
	if v, ok := q[key]; ok && len(v) > 0 {
		return map[string]string{key: v[0]}
	}
	return nil
}

func renderPage(c echo.Context, comp templ.Component) error {
	return renderPageStatus(c, http.StatusOK, comp)
}

func renderPageStatus(c echo.Context, status int, comp templ.Component) error {
	b, err := renderHTML(c.Request().Context(), comp)
	if err != nil {
		return err
	}
	return c.HTMLBlob(status, b)
}

// renderHTML renders a page or a WebSocket fragment. Every page and
// fragment the server renders passes through here, and comes out valid
// UTF-8 whatever a token or a file put in it (wsconn.ValidUTF8).
func renderHTML(ctx context.Context, comp templ.Component) ([]byte, error) {
	var buf bytes.Buffer
	if err := comp.Render(ctx, &buf); err != nil {
		return nil, err
	}
	return wsconn.ValidUTF8(buf.Bytes()), nil
}

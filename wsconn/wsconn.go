// Package wsconn is the one WebSocket connection type of the server: the
// Explorer's tabs, classroom rooms and later streams all use it. A Conn
// has one reader (the goroutine that calls Serve) and one writer
// goroutine with a bounded queue; it enforces the message size and rate
// limits, answers rejected messages with a short note (never a re-render),
// recovers a handler's panic (logging the stack) and closes with a close
// code and reason the client can act on.
//
// A client that cannot keep up is disconnected (close 1012, "reconnect":
// the htmx ws extension reconnects and resumes) rather than slowing
// anyone else; when the writer fails (a reader that stopped reading), the
// reader ends too, so no goroutine outlives its connection.
package wsconn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// Defaults of Options.
const (
	DefaultMaxMessage = 16 << 10 // bytes in one client message
	DefaultRate       = 30       // messages per second (burst the same)
	DefaultQueue      = 32       // messages waiting for a slow client
	writeWait         = 10 * time.Second
	// DefaultPongWait is how long a client may leave a ping unanswered:
	// a tab that stops reading stops answering pings, so it is dropped
	// within this time whatever the socket buffers still hold.
	DefaultPongWait = 25 * time.Second
)

// Close codes the server uses (RFC 6455 and the registry).
const (
	CloseNormal   = websocket.CloseNormalClosure   // the end: do not reconnect
	CloseTooBig   = websocket.CloseMessageTooBig   // a message over the limit
	ClosePolicy   = websocket.ClosePolicyViolation // refused (a full room)
	CloseInternal = websocket.CloseInternalServerErr
	CloseRestart  = websocket.CloseServiceRestart // reconnect
	CloseTryLater = websocket.CloseTryAgainLater  // refused for now
)

// Options configure a connection.
type Options struct {
	MaxMessage int // bytes; 0: DefaultMaxMessage
	Rate       int // messages per second; 0: DefaultRate
	Queue      int // queued messages before a slow client is dropped; 0: DefaultQueue
	// WriteWait is how long one write may take before the client counts
	// as gone; 0: 10 s.
	WriteWait time.Duration
	// PongWait is how long a ping may go unanswered (pings go every
	// PongWait × 2/5); 0: DefaultPongWait.
	PongWait    time.Duration
	Compression bool
	// Note renders a short message for the client (a rejected message, a
	// warning). Notes are dropped, not queued, when the client is behind.
	Note func(msg string) []byte
	Log  *slog.Logger
	// Base ends the connection when it is done (the server shutting
	// down: clients are told to reconnect). nil: never.
	Base context.Context
}

// SameOrigin accepts browsers on this host (and clients that send no
// Origin header). Under "Referrer-Policy: no-referrer" a browser sends
// "Origin: null" even for its own forms; then its Sec-Fetch-Site header
// must say same-origin.
func SameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return r.Header.Get("Sec-Fetch-Site") == "" || r.Header.Get("Sec-Fetch-Site") == "same-origin" || r.Header.Get("Sec-Fetch-Site") == "none"
	}
	if o == "null" {
		return r.Header.Get("Sec-Fetch-Site") == "same-origin"
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

// Conn is one WebSocket connection.
type Conn struct {
	ws     *websocket.Conn
	opt    Options
	out    chan *websocket.PreparedMessage
	ctx    context.Context
	cancel context.CancelFunc

	mu          sync.Mutex // guards the close request
	closeCode   int
	closeReason string
	flush       bool // send what is queued before closing
}

// Upgrade accepts a WebSocket on w, r (same-origin only).
func Upgrade(w http.ResponseWriter, r *http.Request, opt Options) (*Conn, error) {
	if opt.MaxMessage == 0 {
		opt.MaxMessage = DefaultMaxMessage
	}
	if opt.Rate == 0 {
		opt.Rate = DefaultRate
	}
	if opt.Queue == 0 {
		opt.Queue = DefaultQueue
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.WriteWait == 0 {
		opt.WriteWait = writeWait
	}
	if opt.PongWait == 0 {
		opt.PongWait = DefaultPongWait
	}
	if opt.Note == nil {
		opt.Note = func(msg string) []byte { return []byte(msg) }
	}
	up := websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 16384, CheckOrigin: SameOrigin, EnableCompression: opt.Compression}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return nil, err // the upgrader has answered
	}
	base := opt.Base
	if base == nil {
		base = context.WithoutCancel(r.Context())
	}
	ctx, cancel := context.WithCancel(base)
	return &Conn{ws: ws, opt: opt, out: make(chan *websocket.PreparedMessage, opt.Queue), ctx: ctx, cancel: cancel, closeCode: CloseRestart, closeReason: "reconnect"}, nil
}

// Context is done when the connection ends: work for it should stop.
func (c *Conn) Context() context.Context { return c.ctx }

// Prepare makes a message that can be sent to many connections, encoded
// (and compressed) once. It is a text frame, so it is made valid UTF-8
// (ValidUTF8): every message a Conn sends passes through here.
func Prepare(b []byte) *websocket.PreparedMessage {
	m, err := websocket.NewPreparedMessage(websocket.TextMessage, ValidUTF8(b))
	if err != nil { // only for an invalid message type
		panic(err)
	}
	return m
}

// ValidUTF8 is b when it is valid UTF-8 (one pass over it, no copy), else
// a copy with each run of invalid bytes replaced by U+FFFD. A browser
// fails a WebSocket on a text frame that is not UTF-8 (RFC 6455 §8.1),
// and an HTML page that is not decodes differently in every browser: the
// views never write such bytes, and this is the last guard behind them.
func ValidUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	return bytes.ToValidUTF8(b, []byte("\uFFFD"))
}

// Send queues a message; a client that cannot keep up is disconnected (it
// reconnects and resumes) so it never holds up anyone else.
func (c *Conn) Send(m *websocket.PreparedMessage) {
	select {
	case c.out <- m:
	case <-c.ctx.Done():
	default:
		c.Close(CloseRestart, "reconnect: the connection fell behind")
	}
}

// SendBytes is Send of one message.
func (c *Conn) SendBytes(b []byte) { c.Send(Prepare(b)) }

// Note queues a short message the client can do without: when the queue
// is full it is dropped and the client stays.
func (c *Conn) Note(msg string) {
	select {
	case c.out <- Prepare(c.opt.Note(msg)):
	default:
	}
}

// Close ends the connection with a close code and reason; the writer
// sends what is queued first when the code is CloseNormal (a last view).
// The first Close wins.
func (c *Conn) Close(code int, reason string) {
	c.setClose(code, reason)
	c.cancel()
}

func (c *Conn) setClose(code int, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() == nil {
		c.closeCode, c.closeReason, c.flush = code, reason, code == CloseNormal
	}
}

// closing is the close the connection ends with.
func (c *Conn) closing() (code int, reason string, flush bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeCode, c.closeReason, c.flush
}

// Refuse closes a connection that will not be served (a full room) with
// a close code and reason.
func (c *Conn) Refuse(code int, reason string) {
	c.cancel()
	c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
	c.ws.Close()
}

// Handler handles one client message; it runs on the reader goroutine.
type Handler func(ctx context.Context, msg []byte)

// Serve runs the connection until it ends: the writer on its own
// goroutine, the reader here. Messages over the size limit end the
// connection (after a note and close 1009); over the rate limit they are
// dropped with one note per flood; a panic in handle is logged with its
// stack and closes the connection (1011).
func (c *Conn) Serve(handle Handler) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.writer()
	}()
	defer func() {
		c.cancel() // the reader is done: so is the writer (it sends the close frame)
		<-done
	}()
	// Only a pong moves the read deadline: a client that sends but never
	// reads (its pings unread behind its backlog) is dropped all the same.
	c.ws.SetReadDeadline(time.Now().Add(c.opt.PongWait))
	c.ws.SetPongHandler(func(string) error { return c.ws.SetReadDeadline(time.Now().Add(c.opt.PongWait)) })
	lim := newLimiter(c.opt.Rate)
	warned := false
	for c.ctx.Err() == nil {
		msg, err := c.read()
		if errors.Is(err, errTooBig) {
			c.Note(fmt.Sprintf("message too large: at most %d KiB", c.opt.MaxMessage>>10))
			c.Close(CloseTooBig, "message too large")
			return
		}
		if err != nil {
			return
		}
		if !lim.allow(time.Now()) {
			if !warned { // once per flood, not per message
				c.Note("too many messages: slow down")
			}
			warned = true
			continue
		}
		warned = false
		if !c.handle(handle, msg) {
			return
		}
	}
}

var errTooBig = errors.New("message too large")

// read reads one message, at most MaxMessage bytes: a longer one is not
// read further.
func (c *Conn) read() ([]byte, error) {
	_, r, err := c.ws.NextReader()
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(c.opt.MaxMessage)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > c.opt.MaxMessage {
		return nil, errTooBig
	}
	return b, nil
}

// handle runs the handler, turning a panic into a logged error and a
// closed connection; false means the connection is over.
func (c *Conn) handle(h Handler, msg []byte) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			c.opt.Log.Error("panic in a WebSocket handler", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			c.Note("the server failed on that message; reconnecting")
			c.Close(CloseInternal, "server error")
			ok = false
		}
	}()
	h(c.ctx, msg)
	return true
}

func (c *Conn) writer() {
	defer c.ws.Close() // a failed or finished writer ends the reader too
	defer c.cancel()
	ping := time.NewTicker(c.opt.PongWait * 2 / 5)
	defer ping.Stop()
	for {
		select {
		case <-c.ctx.Done():
			code, reason, flush := c.closing()
			if flush || code == CloseTooBig || code == CloseInternal {
				for len(c.out) > 0 {
					if c.write(<-c.out) != nil {
						return
					}
				}
			}
			c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
			return
		case m := <-c.out:
			if c.write(m) != nil {
				return
			}
		case <-ping.C:
			c.ws.SetWriteDeadline(time.Now().Add(c.opt.WriteWait))
			if c.ws.WriteMessage(websocket.PingMessage, nil) != nil {
				return
			}
		}
	}
}

func (c *Conn) write(m *websocket.PreparedMessage) error {
	c.ws.SetWriteDeadline(time.Now().Add(c.opt.WriteWait))
	return c.ws.WritePreparedMessage(m)
}

// limiter is a token bucket: rate messages a second, bursts of rate.
type limiter struct {
	rate   float64
	tokens float64
	last   time.Time
}

func newLimiter(rate int) limiter {
	return limiter{rate: float64(rate), tokens: float64(rate), last: time.Now()}
}

func (l *limiter) allow(now time.Time) bool {
	l.tokens = min(l.rate, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// Message is a client message of the htmx ws extension: a JSON object of
// string (or number) fields plus HEADERS, with a known action.
type Message struct {
	Action string
	fields map[string]string
}

// Get reads a field.
func (m Message) Get(k string) (string, bool) { v, ok := m.fields[k]; return v, ok }

// Parse validates a message against the actions an endpoint accepts.
func Parse(msg []byte, actions map[string]bool) (Message, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(msg, &raw); err != nil {
		return Message{}, errors.New("malformed message: not a JSON object")
	}
	vals := make(map[string]string, len(raw))
	for k, v := range raw {
		if k == "HEADERS" {
			continue
		}
		if len(k) > 64 {
			return Message{}, errors.New("malformed message: field name too long")
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			var n json.Number
			if err := json.Unmarshal(v, &n); err != nil {
				return Message{}, fmt.Errorf("malformed message: field %q must be text", k)
			}
			s = n.String()
		}
		vals[k] = s
	}
	a := vals["action"]
	if !actions[a] {
		return Message{}, fmt.Errorf("unknown action %q", truncate(a, 40))
	}
	return Message{Action: a, fields: vals}, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

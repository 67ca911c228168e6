package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"stepthrough/views"
)

// WebSocket limits.
const (
	maxMessage = 16 << 10 // bytes in one client message
	msgRate    = 30       // messages per second per connection (burst the same)
	writeWait  = 10 * time.Second
	pongWait   = 60 * time.Second
	pingPeriod = 50 * time.Second
)

// limiter is a token bucket: msgRate messages a second, bursts of msgRate.
type limiter struct {
	tokens float64
	last   time.Time
}

func newLimiter() limiter { return limiter{tokens: msgRate, last: time.Now()} }

// allow takes a token if there is one.
func (l *limiter) allow(now time.Time) bool {
	l.tokens = min(msgRate, l.tokens+now.Sub(l.last).Seconds()*msgRate)
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// sameOrigin accepts browsers on this host (and clients that send no Origin).
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}

var upgrader = websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 16384, CheckOrigin: sameOrigin}

// ws attaches a connection to its session: one reader goroutine (this
// one) and one writer goroutine.
func (s *Server) ws(c echo.Context) error {
	se := s.session(c.QueryParam("sid"))
	if se == nil { // evicted or unknown: a fresh session keeps the page usable
		var err error
		if se, err = s.newSession(clientOf(c)); err != nil {
			return c.String(http.StatusServiceUnavailable, err.Error())
		}
	}
	conn, err := upgrader.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		return nil // the upgrader has answered
	}
	defer conn.Close()
	out := make(chan []byte, 8)
	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	go s.writer(ctx, conn, out)

	conn.SetReadLimit(maxMessage)
	conn.SetReadDeadline(time.Now().Add(pongWait))
	conn.SetPongHandler(func(string) error { conn.SetReadDeadline(time.Now().Add(pongWait)); return nil })
	lim := newLimiter()
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			if websocket.IsCloseError(err, websocket.CloseMessageTooBig) || err == websocket.ErrReadLimit {
				s.send(ctx, out, se, "message too large: at most 16 KiB")
			}
			return nil
		}
		conn.SetReadDeadline(time.Now().Add(pongWait))
		if !lim.allow(time.Now()) {
			s.send(ctx, out, se, "too many messages: slow down")
			continue
		}
		action, get, err := parseMessage(msg)
		if err != nil {
			s.send(ctx, out, se, err.Error())
			continue
		}
		se.mu.Lock()
		se.act(ctx, action, get)
		html := render(ctx, se)
		se.mu.Unlock()
		select {
		case out <- html:
		case <-ctx.Done():
			return nil
		}
	}
}

func (s *Server) writer(ctx context.Context, conn *websocket.Conn, out <-chan []byte) {
	ping := time.NewTicker(pingPeriod)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case msg := <-out:
			conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := conn.WriteMessage(websocket.TextMessage, msg); err != nil {
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

// send shows an error in the page without changing the session.
func (s *Server) send(ctx context.Context, out chan<- []byte, se *Session, msg string) {
	se.mu.Lock()
	prev := se.err
	se.err = msg
	html := render(ctx, se)
	se.err = prev
	se.mu.Unlock()
	select {
	case out <- html:
	case <-ctx.Done():
	}
}

func render(ctx context.Context, se *Session) []byte {
	var buf bytes.Buffer
	if err := views.ExplorerView(se.explorer()).Render(ctx, &buf); err != nil {
		return []byte(fmt.Sprintf(`<div id="explorer"><p class="error">render failed: %s</p></div>`, err))
	}
	return buf.Bytes()
}

var knownActions = map[string]bool{"run": true, "step": true, "back": true, "next-token": true, "end": true, "reset": true, "temperature": true, "view": true}

// parseMessage validates an htmx ws message: a JSON object of string
// values (plus HEADERS) with a known action.
func parseMessage(msg []byte) (string, func(string) (string, bool), error) {
	return parseMessageFor(msg, knownActions)
}

// parseMessageFor is parseMessage with the actions an endpoint accepts.
func parseMessageFor(msg []byte, known map[string]bool) (string, func(string) (string, bool), error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(msg, &raw); err != nil {
		return "", nil, fmt.Errorf("malformed message: not a JSON object")
	}
	vals := map[string]string{}
	for k, v := range raw {
		if k == "HEADERS" {
			continue
		}
		if len(k) > 64 {
			return "", nil, fmt.Errorf("malformed message: field name too long")
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			var n json.Number
			if err := json.Unmarshal(v, &n); err != nil {
				return "", nil, fmt.Errorf("malformed message: field %q must be text", k)
			}
			s = n.String()
		}
		vals[k] = s
	}
	action := vals["action"]
	if !known[action] {
		return "", nil, fmt.Errorf("unknown action %q", action)
	}
	if _, ok := settingKeys["prompt"]; ok && len(vals["prompt"]) > maxPromptBytes {
		return "", nil, fmt.Errorf("the prompt is %d bytes; the limit is %d", len(vals["prompt"]), maxPromptBytes)
	}
	return action, func(k string) (string, bool) { v, ok := vals[k]; return v, ok }, nil
}

package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"stepthrough/engine"
	"stepthrough/engine/serve"
	"stepthrough/present"
	"stepthrough/views"
	"stepthrough/wsconn"
)

// runServing serves the run's load under each of its settings in turn,
// publishing every step and token.
func (s *Server) runServing(r *servingRun, lm *engine.Loaded) {
	defer s.serving.finished()
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic in a serving run", "panic", fmt.Sprint(p))
			r.end("the run failed: " + fmt.Sprint(p))
		}
	}()
	ctx, cancel := context.WithTimeout(s.base, servingTimeout)
	defer cancel()
	for k, o := range r.settings {
		r.publish(map[string]any{"t": "setting", "s": k, "name": r.names[k]})
		texts, finish := make([]string, r.load.Users), make([]string, r.load.Users)
		onStep := func(st serve.Step) {
			parts := make([][4]int, len(st.Parts))
			for i, p := range st.Parts {
				parts[i] = [4]int{p.Req - 1, p.Tokens, b2i(p.Prefill), p.KV}
			}
			r.publish(map[string]any{"t": "step", "s": k, "i": st.Index, "at": ms(st.At), "d": ms(st.Dur), "p": parts,
				"r": st.Running, "w": st.Waiting, "kv": st.KVUsed, "held": st.KVHeld, "pre": len(st.Preempted)})
		}
		onEvent := func(user int, ev serve.Event) {
			if ev.Text != "" {
				r.publish(map[string]any{"t": "tok", "s": k, "u": user, "x": ev.Text})
			}
		}
		rep, err := serve.RunLoad(ctx, lm, o, r.load, onStep, onEvent)
		if err != nil {
			r.end(fmt.Sprintf("%s: %v", r.names[k], err))
			return
		}
		copy(texts, rep.Texts)
		copy(finish, rep.Finish)
		r.record(rep, texts, finish)
		r.publish(map[string]any{"t": "done", "s": k})
	}
	if err := r.measureAgain(ctx, lm); err != nil {
		r.end(err.Error())
		return
	}
	r.publish(map[string]any{"t": "end"})
	r.end("")
}

// servingRounds is how many times each setting runs: the first watched,
// the others measured quietly, alternating between the settings.
const servingRounds = 3

// measureAgain runs every setting servingRounds−1 more times, alternating,
// so each figure has a spread.
func (r *servingRun) measureAgain(ctx context.Context, lm *engine.Loaded) error {
	for round := 2; round <= servingRounds; round++ {
		for k, o := range r.settings {
			r.setRound(fmt.Sprintf("measuring again: round %d of %d, %s", round, servingRounds, r.names[k]))
			r.publish(map[string]any{"t": "round", "s": k, "round": round, "of": servingRounds})
			rep, err := serve.RunLoad(ctx, lm, o, r.load, nil, nil)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", r.names[k], round, err)
			}
			r.addRepeat(k, rep)
		}
	}
	r.setRound("")
	return nil
}

func (r *servingRun) addRepeat(k int, rep *serve.Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.repeats[k] = append(r.repeats[k], rep)
}

func (r *servingRun) setRound(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.round = s
}

// record keeps a finished setting's report and each user's text.
func (r *servingRun) record(rep *serve.Report, texts, finish []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, rep)
	r.repeats = append(r.repeats, []*serve.Report{rep})
	r.texts, r.finish = append(r.texts, texts), append(r.finish, finish)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (s *Server) servingRunPage(c echo.Context) error {
	r := s.serving.get(c.Param("id"))
	if r == nil {
		p := s.servingBase(present.DefaultServingForm(s.reg.Default()))
		p.Error = "no such run (the server keeps its last few)"
		return renderPageStatus(c, http.StatusNotFound, views.ServingPageView(p))
	}
	p := s.servingBase(r.form)
	p.Run = present.ServingRun(r.state())
	return renderPage(c, views.ServingPageView(p))
}

// servingEvents streams a run's events as server-sent events: everything
// so far, then each new one, until the run ends or the client leaves.
func (s *Server) servingEvents(c echo.Context) error {
	r := s.serving.get(c.Param("id"))
	if r == nil {
		return c.String(http.StatusNotFound, "no such run")
	}
	release, ok := s.streams.acquire(clientOf(c))
	if !ok {
		return c.String(http.StatusTooManyRequests, "too many open event streams: close another page of runs and reload")
	}
	defer release()
	w := c.Response()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w.Writer)
	ctx := c.Request().Context()
	next := 0
	for {
		evs, done, changed := r.since(next)
		rc.SetWriteDeadline(time.Now().Add(streamWriteWait)) // a client that stops reading is let go
		for _, e := range evs {
			if _, err := fmt.Fprintf(w, "data: %s\n\n", e); err != nil {
				return nil
			}
		}
		next += len(evs)
		if rc.Flush() != nil {
			return nil
		}
		if done {
			fmt.Fprint(w, "event: close\ndata: {}\n\n")
			w.Flush()
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		case <-s.base.Done():
			return nil
		}
	}
}

// servingWS streams a run's events over a WebSocket, one JSON message
// each (the same as the event stream's data lines), from event ?from=N
// on (0: the start), and closes normally when the run ends. A client that
// falls behind is disconnected and can reconnect with from= the count it
// received.
func (s *Server) servingWS(c echo.Context) error {
	r := s.serving.get(c.Param("id"))
	if r == nil {
		return c.String(http.StatusNotFound, "no such run")
	}
	next, err := strconv.Atoi(c.QueryParam("from"))
	if c.QueryParam("from") != "" && (err != nil || next < 0) {
		return c.String(http.StatusBadRequest, "from: a count of events already received")
	}
	conn, err := wsconn.Upgrade(c.Response(), c.Request(), wsconn.Options{Queue: 4096, Log: s.log, Base: s.base, PongWait: s.cfg.PongWait})
	if err != nil {
		return nil // the upgrader has answered
	}
	go func() {
		ctx := conn.Context()
		for {
			evs, done, changed := r.since(next)
			for _, e := range evs {
				conn.SendBytes(e)
			}
			next += len(evs)
			if done {
				conn.Close(wsconn.CloseNormal, "the run ended")
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	conn.Serve(func(context.Context, []byte) {}) // the client only listens
	return nil
}

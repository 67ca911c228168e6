package server

import (
	"context"
	"fmt"

	"github.com/labstack/echo/v4"

	"stepthrough/present"
	"stepthrough/session"
	"stepthrough/spec"
	"stepthrough/views"
	"stepthrough/wsconn"
)

// explorerActions are the Explorer's WebSocket actions.
var explorerActions = session.ActionSet(nil)

// ws attaches a connection to its tab's session; each message is applied
// to the session and answered with the re-rendered #explorer fragment.
func (s *Server) ws(c echo.Context) error {
	se := s.sessions.Get(c.QueryParam("sid"))
	if se == nil {
		// evicted, or the page was served by another server: the page
		// reloads its own address, which resumes its run at its step here
		// (sessions need no sticky routing: their state is in the URL)
		conn, err := wsconn.Upgrade(c.Response(), c.Request(), wsconn.Options{Note: explorerNote, Log: s.log, Base: s.base, PongWait: s.cfg.PongWait})
		if err != nil {
			return nil
		}
		conn.SendBytes(renderBytes(c.Request().Context(), views.ExplorerResume()))
		conn.Serve(func(context.Context, []byte) {}) // until the page goes
		return nil
	}
	conn, err := wsconn.Upgrade(c.Response(), c.Request(), wsconn.Options{Note: explorerNote, Log: s.log, Base: s.base, PongWait: s.cfg.PongWait})
	if err != nil {
		return nil // the upgrader has answered
	}
	defer se.Attach()()
	drawn := c.QueryParam("drawn") // the model map this page has (its key; a wrong one only costs a redraw)
	if len(drawn) > 20 {
		drawn = ""
	}
	client := clientOf(c)
	conn.Serve(func(ctx context.Context, raw []byte) {
		defer func() {
			if p := recover(); p != nil {
				se.Rebuild(context.WithoutCancel(ctx)) // never left half-changed
				panic(p)                               // wsconn logs it and closes the connection (1011)
			}
		}()
		if reply, note := s.explorerMessage(ctx, client, se, raw, &drawn); note != "" {
			conn.Note(note)
		} else {
			conn.SendBytes(reply)
		}
	})
	return nil
}

// explorerMessage handles one Explorer message from client: the
// re-rendered fragment, or a note for a message refused before it reached
// the session (malformed, or no work slot for it). An action that may
// compute runs in one of the client's work slots. drawn is the key of the
// model map the page has: the map is sent again only when the token step
// or the run changed, else only its state.
func (s *Server) explorerMessage(ctx context.Context, client string, se *session.Session, raw []byte, drawn *string) (reply []byte, note string) {
	msg, err := wsconn.Parse(raw, explorerActions)
	if err != nil {
		return nil, err.Error()
	}
	act := func(ctx context.Context) error { return se.Act(ctx, msg.Action, spec.Getter(msg.Get)) }
	if session.Computing(msg.Action) { // a work slot while it runs
		err = s.inSlot(ctx, client, act)
	} else {
		err = act(ctx)
	}
	if he, ok := err.(*echo.HTTPError); ok { // busy: the session is as it was
		return nil, fmt.Sprint(he.Message)
	}
	return explorerFragment(ctx, se, err, drawn), ""
}

// explorerFragment renders the #explorer fragment, with err shown in it,
// and the model map or its state (see explorerMessage).
func explorerFragment(ctx context.Context, se *session.Session, err error, drawn *string) []byte {
	e := present.Explorer(se)
	if err != nil {
		e.Error = err.Error()
	}
	out := renderBytes(ctx, views.ExplorerView(e))
	switch key := mapKey(e.Map); {
	case key != "" && key == *drawn:
		out = append(out, renderBytes(ctx, views.MapStateView(e.Map))...)
	default:
		out = append(out, renderBytes(ctx, views.MapHolder(e.Map))...)
		*drawn = key
	}
	return out
}

func mapKey(m *views.ModelMap) string {
	if m == nil {
		return ""
	}
	return m.Key
}

func explorerNote(msg string) []byte {
	return renderBytes(context.Background(), views.ExplorerNote(msg))
}

package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	qrcode "github.com/skip2/go-qrcode"

	"stepthrough/classroom"
	"stepthrough/present"
	"stepthrough/views"
	"stepthrough/wsconn"
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
//	POST /rooms/C/end             ends a room this browser started
func (s *Server) classroomRoutes(e *echo.Echo) {
	e.GET("/classroom", s.classroomHome)
	e.GET("/join", s.join)
	e.POST("/rooms", s.startRoom)
	e.GET("/rooms/:code", s.studentPage)
	e.GET("/rooms/:code/teach", s.teachRoom)
	e.GET("/rooms/:code/projector", s.projectorPage)
	e.GET("/rooms/:code/ws", s.roomWS)
	e.GET("/rooms/:code/poll.csv", s.pollCSV)
	e.POST("/rooms/:code/end", s.endMyRoom)
}

func (s *Server) classroomHome(c echo.Context) error {
	return s.classroomHomeWith(c, http.StatusOK, "", "")
}

func (s *Server) classroomHomeWith(c echo.Context, status int, msg, code string) error {
	ended, _ := classroom.NormalizeCode(c.QueryParam("ended")) // "" unless a code
	h := present.ClassroomHome(s.lessons, s.liveMyRooms(c), msg, code, ended)
	return c.HTMLBlob(status, renderBytes(c.Request().Context(), views.ClassroomHomePage(h)))
}

func renderBytes(ctx context.Context, comp templ.Component) []byte {
	b, err := renderHTML(ctx, comp)
	if err != nil {
		return []byte(`<p class="error">render failed</p>`)
	}
	return b
}

// lookupRoom finds a room by a code from a URL or form, counting unknown
// codes against the client so codes cannot be guessed by brute force.
func (s *Server) lookupRoom(c echo.Context, raw string) (*classroom.Room, error) {
	client := clientOf(c)
	if !s.class.AllowJoin(client, false) {
		return nil, classroom.ErrTooManyTries
	}
	code, ok := classroom.NormalizeCode(raw)
	if !ok {
		s.class.AllowJoin(client, true)
		return nil, fmt.Errorf("%q is not a join code: codes are %d letters and digits", truncate(raw, 20), classroom.CodeLen)
	}
	r, err := s.class.Lookup(c.Request().Context(), code)
	if err != nil {
		s.class.AllowJoin(client, true)
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
	return c.Redirect(http.StatusSeeOther, "/rooms/"+r.Code())
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, classroom.ErrTooManyTries), errors.Is(err, classroom.ErrRoomLimit), errors.Is(err, classroom.ErrLiveRooms):
		return http.StatusTooManyRequests
	case errors.Is(err, classroom.ErrRoomsFull), errors.Is(err, classroom.ErrStore):
		return http.StatusServiceUnavailable
	case errors.Is(err, classroom.ErrRoomGone), errors.Is(err, errNoRoomOrKey):
		return http.StatusNotFound
	}
	return http.StatusBadRequest
}

// startRoom creates a room and sends the instructor to its page.
func (s *Server) startRoom(c echo.Context) error {
	if !wsconn.SameOrigin(c.Request()) {
		return c.String(http.StatusForbidden, "cross-site request refused")
	}
	name := c.FormValue("lesson")
	var explorer url.Values
	if name == "" {
		raw := c.FormValue("explorer")
		if len(raw) > 8<<10 {
			return s.classroomHomeWith(c, http.StatusBadRequest, "the Explorer link is too long", "")
		}
		u, err := url.Parse(raw)
		if err != nil || raw == "" {
			return s.classroomHomeWith(c, http.StatusBadRequest, "choose a lesson, or start from the Explorer", "")
		}
		explorer = u.Query()
	} else if _, ok := s.lessons[name]; !ok {
		return s.classroomHomeWith(c, http.StatusNotFound, fmt.Sprintf("no lesson %q", truncate(name, 40)), "")
	}
	r, secret, err := s.class.Create(c.Request().Context(), clientOf(c), name, explorer)
	if err != nil {
		return s.classroomHomeWith(c, statusOf(err), err.Error(), "")
	}
	s.rememberRoom(c, r.Code(), secret)
	return c.Redirect(http.StatusSeeOther, "/rooms/"+r.Code()+"/teach?key="+secret)
}

// studentPage shows the room as it is now; the WebSocket keeps it current.
func (s *Server) studentPage(c echo.Context) error {
	r, err := s.lookupRoom(c, c.Param("code"))
	if err != nil {
		return s.classroomHomeWith(c, statusOf(err), err.Error(), "")
	}
	s.ensureStudent(c) // the signed cookie the room's WebSocket reads
	p, err := r.StudentPage(c.Request().Context())
	if err != nil {
		return s.classroomHomeWith(c, statusOf(err), err.Error(), "")
	}
	return c.HTMLBlob(http.StatusOK, renderBytes(c.Request().Context(), views.StudentRoomPage(p)))
}

func (s *Server) roomTTL() time.Duration {
	if s.cfg.RoomTTL > 0 {
		return s.cfg.RoomTTL
	}
	return classroom.DefaultRoomTTL
}

// errNoRoomOrKey answers every request for a room that names an unknown
// code or carries a wrong key, alike: the answer does not tell which.
var errNoRoomOrKey = errors.New("no such room, or this is not its instructor link")

// instructorRoom finds the room of an instructor request (the key in the
// first visit's ?key= or the room's cookie). Unknown codes and wrong keys
// get the same answer and count against the client, as wrong join codes do.
func (s *Server) instructorRoom(c echo.Context) (*classroom.Room, string, error) {
	client := clientOf(c)
	if !s.class.AllowJoin(client, false) {
		return nil, "", classroom.ErrTooManyTries
	}
	key, _ := instructorKey(c)
	code, ok := classroom.NormalizeCode(c.Param("code"))
	if ok {
		if r, err := s.class.Lookup(c.Request().Context(), code); err == nil && r.IsInstructor(key) {
			return r, key, nil
		}
	}
	s.class.AllowJoin(client, true)
	return nil, "", errNoRoomOrKey
}

func (s *Server) teachRoom(c echo.Context) error {
	r, key, err := s.instructorRoom(c)
	if err != nil {
		return s.classroomHomeWith(c, statusOf(err), err.Error(), "")
	}
	if _, fromURL := instructorKey(c); fromURL { // move the key out of the address bar
		c.SetCookie(s.cookie(teachCookie, key, "/rooms/"+r.Code(), s.roomTTL(), http.SameSiteStrictMode, c))
		return c.Redirect(http.StatusSeeOther, "/rooms/"+r.Code()+"/teach")
	}
	t, err := r.TeachPage(c.Request().Context())
	if err != nil {
		return s.classroomHomeWith(c, statusOf(err), err.Error(), "")
	}
	p := t.Page
	p.Join = s.joinDetails(c, r.Code())
	p.InstructURL = "/rooms/" + r.Code() + "/teach?key=" + key
	p.CSVURL = "/rooms/" + r.Code() + "/poll.csv"
	p.Expires = hoursOrMinutes(s.class.InstructorGone()) + " after you close this page (unless you come back), or " + hoursOrMinutes(s.roomTTL()) + " after your last action"
	if t.Settings != nil {
		p.Settings = present.RoomSettings(s.reg.Names(), *t.Settings)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTMLBlob(http.StatusOK, renderBytes(c.Request().Context(), views.TeachRoomPage(p)))
}

// hoursOrMinutes says a duration in hours or minutes.
func hoursOrMinutes(d time.Duration) string {
	if d >= time.Hour && d%time.Hour == 0 {
		return strconv.Itoa(int(d/time.Hour)) + " h"
	}
	return strconv.Itoa(int(d.Round(time.Minute)/time.Minute)) + " min"
}

// pollCSV exports every answer given in the room.
func (s *Server) pollCSV(c echo.Context) error {
	r, _, err := s.instructorRoom(c)
	if err != nil {
		return c.String(statusOf(err), err.Error())
	}
	b, err := r.CSV(c.Request().Context())
	if err != nil {
		return c.String(statusOf(err), err.Error())
	}
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="room-%s-polls.csv"`, r.Code()))
	return c.Blob(http.StatusOK, "text/csv; charset=utf-8", b)
}

// roomWS is a room connection: the instructor's (?as=instructor, with
// the room's cookie or ?key=) or a student's (the signed student cookie
// set by the room's page; never an id in the address).
func (s *Server) roomWS(c echo.Context) error {
	var r *classroom.Room
	instructor := c.QueryParam("as") == "instructor" || c.QueryParam("key") != ""
	projector := c.QueryParam("as") == "projector"
	student := ""
	switch {
	case projector:
		var err error
		if r, err = s.lookupRoom(c, c.Param("code")); err != nil {
			return c.String(statusOf(err), err.Error())
		}
	case instructor:
		var err error
		if r, _, err = s.instructorRoom(c); err != nil {
			return c.String(statusOf(err), err.Error())
		}
	default:
		if student = s.student(c); student == "" {
			return c.String(http.StatusForbidden, "open the room's page first: it gives this browser its student id")
		}
		var err error
		if r, err = s.lookupRoom(c, c.Param("code")); err != nil {
			return c.String(statusOf(err), err.Error())
		}
	}
	conn, err := wsconn.Upgrade(c.Response(), c.Request(), wsconn.Options{Compression: true, Note: classroom.Note, Log: s.log, Base: s.base, PongWait: s.cfg.PongWait})
	if err != nil {
		return nil // the upgrader has answered
	}
	role := classroom.Student
	switch {
	case projector:
		role = classroom.Projector
	case instructor:
		role = classroom.Instructor
	}
	r.Attach(conn, clientOf(c), student, role)
	return nil
}

// projectorPage is the view to show the class: the join details large and
// the room as students follow it, with no control and no key in it.
func (s *Server) projectorPage(c echo.Context) error {
	r, err := s.lookupRoom(c, c.Param("code"))
	if err != nil {
		return s.classroomHomeWith(c, statusOf(err), err.Error(), "")
	}
	p, err := r.StudentPage(c.Request().Context())
	if err != nil {
		return s.classroomHomeWith(c, statusOf(err), err.Error(), "")
	}
	j := s.joinDetails(c, r.Code())
	j.Projected = true
	return c.HTMLBlob(http.StatusOK, renderBytes(c.Request().Context(), views.ProjectorRoomPage(p, j)))
}

// joinDetails is how students reach a room: its link and QR code for an
// address they can use. Opened on a loopback address, that is this
// machine's network address when the server listens on every interface;
// when it listens on loopback only no student can reach it, and the page
// says how to serve on the network.
func (s *Server) joinDetails(c echo.Context, code string) views.Join {
	j := views.Join{Code: code, Projector: "/rooms/" + code + "/projector"}
	host := c.Request().Host
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		h, port = host, ""
	}
	if ip := net.ParseIP(strings.Trim(h, "[]")); (ip != nil && ip.IsLoopback()) || strings.EqualFold(h, "localhost") {
		j.Loopback, j.AllInterfaces = true, listensEverywhere(s.cfg.Addr)
		lan := lanAddrs()
		for _, a := range lan {
			j.LAN = append(j.LAN, c.Scheme()+"://"+hostPort(a, port)+"/rooms/"+code)
		}
		if j.AllInterfaces && len(lan) > 0 {
			host = hostPort(lan[0], port)
		}
		addr := "--addr 0.0.0.0:" + cmp.Or(port, "8080")
		j.Command, j.Binary = "go run . serve "+addr, "stepthrough serve "+addr
	}
	j.URL = c.Scheme() + "://" + host + "/rooms/" + code
	if q, err := qrcode.New(j.URL, qrcode.Medium); err == nil {
		q.DisableBorder = true // the SVG draws the quiet zone
		j.QR = q.Bitmap()
	}
	return j
}

func hostPort(h, port string) string {
	if port == "" {
		return h
	}
	return net.JoinHostPort(h, port)
}

// listensEverywhere reports whether a listen address takes connections on
// every interface.
func listensEverywhere(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	return err == nil && (h == "" || h == "0.0.0.0" || h == "::")
}

// lanAddrs are this machine's IPv4 addresses on its networks (no
// loopback, no link-local).
func lanAddrs() []string {
	var out []string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip := n.IP.To4(); ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				out = append(out, ip.String())
			}
		}
	}
	return out
}

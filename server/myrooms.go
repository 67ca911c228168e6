package server

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"stepthrough/classroom"
	"stepthrough/views"
	"stepthrough/wsconn"
)

// myRoomsCookie lists the rooms this browser started, each as its code
// and instructor key, so that an instructor whose tabs closed (or who hit
// the live-room limit while rehearsing) still sees them on the Classroom
// page and can end them. It is HttpOnly and SameSite=Strict, as the
// room's own instructor cookie is.
const myRoomsCookie = "stepthrough-my-rooms"

// maxMyRooms bounds the list: the newest are kept.
const maxMyRooms = 10

// roomKey is one entry of myRoomsCookie.
type roomKey struct{ code, key string }

// myRooms reads the list from the request; malformed and repeated
// entries are skipped (the cookie is the client's to change).
func myRooms(c echo.Context) []roomKey {
	ck, err := c.Cookie(myRoomsCookie)
	if err != nil || len(ck.Value) > maxMyRooms*64 {
		return nil
	}
	var out []roomKey
	for _, p := range strings.Split(ck.Value, ".") {
		raw, key, ok := strings.Cut(p, "-")
		code, okc := classroom.NormalizeCode(raw)
		if !ok || !okc || !classroom.ValidStudent(key) || slices.ContainsFunc(out, func(k roomKey) bool { return k.code == code }) {
			continue // a key is 32 hex digits, as a student id is
		}
		out = append(out, roomKey{code, key})
		if len(out) == maxMyRooms {
			break
		}
	}
	return out
}

// setMyRooms writes the list back (empty: the cookie is deleted).
func (s *Server) setMyRooms(c echo.Context, ks []roomKey) {
	parts := make([]string, 0, len(ks))
	for _, k := range ks[:min(len(ks), maxMyRooms)] {
		parts = append(parts, k.code+"-"+k.key)
	}
	ck := s.cookie(myRoomsCookie, strings.Join(parts, "."), "/", s.roomTTL()+s.class.InstructorGone(), http.SameSiteStrictMode, c)
	if len(parts) == 0 {
		ck.MaxAge = -1
	}
	c.SetCookie(ck)
}

// rememberRoom puts a room this browser just started first in its list.
func (s *Server) rememberRoom(c echo.Context, code, key string) {
	s.setMyRooms(c, append([]roomKey{{code, key}}, myRooms(c)...))
}

// liveMyRooms are the rooms of the list that are still open and whose
// key is still right, summarised; the cookie drops the others. An entry
// that names no room, or a wrong key, counts against the client as a
// wrong join code does.
func (s *Server) liveMyRooms(c echo.Context) []views.MyRoom {
	ctx := c.Request().Context()
	ks := myRooms(c)
	var keep []roomKey
	var out []views.MyRoom
	for _, k := range ks {
		if !s.class.AllowJoin(clientOf(c), false) {
			break
		}
		r, err := s.class.Lookup(ctx, k.code)
		if err != nil || !r.IsInstructor(k.key) {
			s.class.AllowJoin(clientOf(c), true)
			continue
		}
		sum, err := r.Summary(ctx)
		if err != nil {
			continue
		}
		keep = append(keep, k)
		out = append(out, views.MyRoom{
			Code: sum.Code, Title: sum.Title, Step: sum.LessonStep + 1, Steps: sum.Steps,
			Students: sum.Students, Teachers: sum.Teachers, Expires: sum.Expires,
			TeachURL: "/rooms/" + k.code + "/teach?key=" + k.key,
		})
	}
	if len(keep) != len(ks) {
		s.setMyRooms(c, keep)
	}
	return out
}

// endMyRoom ends a room this browser started (POST /rooms/C/end): the
// key comes from the browser's list of its rooms, or the room's own
// instructor cookie.
func (s *Server) endMyRoom(c echo.Context) error {
	if !wsconn.SameOrigin(c.Request()) {
		return c.String(http.StatusForbidden, "cross-site request refused")
	}
	code, _ := classroom.NormalizeCode(c.Param("code"))
	key, _ := instructorKey(c)
	for _, k := range myRooms(c) {
		if k.code == code {
			key = k.key
		}
	}
	if !s.class.AllowJoin(clientOf(c), false) {
		return s.classroomHomeWith(c, statusOf(classroom.ErrTooManyTries), classroom.ErrTooManyTries.Error(), "")
	}
	r, err := s.class.Lookup(c.Request().Context(), code)
	if err != nil || !r.IsInstructor(key) {
		s.class.AllowJoin(clientOf(c), true)
		return s.classroomHomeWith(c, http.StatusNotFound, errNoRoomOrKey.Error(), "")
	}
	if err := r.End(c.Request().Context()); err != nil {
		return s.classroomHomeWith(c, statusOf(err), err.Error(), "")
	}
	return c.Redirect(http.StatusSeeOther, "/classroom?ended="+code)
}

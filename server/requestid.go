package server

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"regexp"

	"github.com/labstack/echo/v4"
)

// Every request gets an id: the X-Request-ID a proxy sent (when it is a
// short token), else a new one. The response carries it, and the log
// lines a request writes name it, so one request is followed across a
// proxy's and several servers' logs.

const requestIDHeader = "X-Request-ID"

var requestIDForm = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// requestIDKey is where the id is kept in echo's context.
const requestIDKey = "request-id"

func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(requestIDHeader)
		if !requestIDForm.MatchString(id) {
			var b [8]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		c.Set(requestIDKey, id)
		c.Response().Header().Set(requestIDHeader, id)
		return next(c)
	}
}

// reqLog is the server's logger with the request's id on every line.
func (s *Server) reqLog(c echo.Context) *slog.Logger {
	id, _ := c.Get(requestIDKey).(string)
	return s.log.With("req", id)
}

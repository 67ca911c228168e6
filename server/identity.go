package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"stepthrough/classroom"
)

// Cookies that identify a browser to the classroom. A student is an
// anonymous id signed with the server's secret (a forged or copied-in id
// does not verify); an instructor holds the room's key in a cookie scoped
// to the room's path, so the key leaves the address bar after the first
// visit.
const (
	studentCookie = "stepthrough_student"
	teachCookie   = "stepthrough_teach"
)

// loadSecret reads the server's signing secret from dir/secret.key,
// creating it (0600) when missing; without a data directory the secret
// lives as long as the process.
func loadSecret(dir string) ([]byte, error) {
	if dir == "" {
		b := make([]byte, 32)
		rand.Read(b)
		return b, nil
	}
	path := filepath.Join(dir, "secret.key")
	b, err := os.ReadFile(path)
	if err == nil && len(b) == 64 {
		if s, err := hex.DecodeString(string(b)); err == nil {
			return s, nil
		}
	}
	if err == nil {
		return nil, fmt.Errorf("%s is not a 32-byte hex secret: delete it to make a new one (students' cookies then start over)", path)
	}
	if !os.IsNotExist(err) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	s := make([]byte, 32)
	rand.Read(s)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, []byte(hex.EncodeToString(s)), 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return s, nil
}

func (s *Server) mac(kind, v string) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(kind + ":" + v))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// signedStudent is a student id with its signature, as the cookie holds it.
func (s *Server) signedStudent(id string) string { return id + "." + s.mac("student", id) }

// student reads and verifies the student cookie; "" when there is none
// or it does not verify.
func (s *Server) student(c echo.Context) string {
	ck, err := c.Cookie(studentCookie)
	if err != nil {
		return ""
	}
	id, sig, ok := strings.Cut(ck.Value, ".")
	if !ok || !classroom.ValidStudent(id) || !hmac.Equal([]byte(sig), []byte(s.mac("student", id))) {
		return ""
	}
	return id
}

// ensureStudent returns the verified student id, setting a new signed
// cookie when there is none.
func (s *Server) ensureStudent(c echo.Context) string {
	if id := s.student(c); id != "" {
		return id
	}
	id := classroom.NewStudent()
	c.SetCookie(s.cookie(studentCookie, s.signedStudent(id), "/", s.roomTTL(), http.SameSiteLaxMode, c))
	return id
}

func (s *Server) cookie(name, value, path string, ttl time.Duration, same http.SameSite, c echo.Context) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: path, HttpOnly: true, SameSite: same, MaxAge: int(ttl.Seconds()), Secure: c.Scheme() == "https"}
}

// instructorKey is the room key a request carries: the ?key= of the first
// visit, else the room-scoped cookie.
func instructorKey(c echo.Context) (key string, fromURL bool) {
	if k := c.QueryParam("key"); k != "" {
		return k, true
	}
	if ck, err := c.Cookie(teachCookie); err == nil {
		return ck.Value, false
	}
	return "", false
}

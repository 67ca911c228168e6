package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"stepthrough/static"
)

// contentSecurityPolicy allows the page's own scripts, styles, images and
// WebSocket only: no inline script or style (htmx is told not to inject
// its indicator styles and not to evaluate), no framing. PNG handouts are
// drawn from blob: and data: images.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self' blob:; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// maxBody caps every request body (forms are small; nothing uploads).
const maxBody = "64K"

// secureHeaders sets the headers every response carries.
func (s *Server) secureHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if c.IsTLS() {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		return next(c)
	}
}

// literalSemicolons reads a ";" in a URL's query as part of a value, as
// a link typed by hand means it ("ablate=L1H2;L2mlp", as the form's
// placeholder writes a set; a prompt with one), where Go's query parser
// would drop the whole pair and run without it, saying nothing. The app's
// own links escape it; nothing here uses ";" between pairs.
func literalSemicolons(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if u := c.Request().URL; strings.Contains(u.RawQuery, ";") {
			u.RawQuery = strings.ReplaceAll(u.RawQuery, ";", "%3B")
		}
		return next(c)
	}
}

// allowedHosts refuses requests for a Host the server was not told it
// serves (DNS rebinding): by default the listen address and localhost.
func (s *Server) allowedHosts(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		host := c.Request().Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.ToLower(strings.Trim(host, "[]"))
		if !s.hosts[host] {
			return c.String(http.StatusMisdirectedRequest, fmt.Sprintf("this server does not serve the host %q (start it with --allowed-hosts)", truncate(host, 64)))
		}
		return next(c)
	}
}

// hostSet is the allowlist: the configured hosts, else the listen
// address's host and the loopback names. An empty or unspecified listen
// host (":8080", "0.0.0.0") allows every host unless hosts are given.
func hostSet(addr string, allowed []string) map[string]bool {
	set := map[string]bool{}
	for _, h := range allowed {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			set[h] = true
		}
	}
	if len(set) > 0 {
		return set
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" || host == "0.0.0.0" || host == "::" {
		return nil // every interface: nothing to pin the Host to
	}
	set[strings.ToLower(strings.Trim(host, "[]"))] = true
	for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
		set[h] = true
	}
	return set
}

// ipExtractor reads the client's address from the socket, or from
// X-Forwarded-For only when the request comes through a trusted proxy.
func ipExtractor(trusted []*net.IPNet) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range trusted {
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// ParseCIDRs reads comma-separated CIDR ranges (or single addresses).
func ParseCIDRs(s string) ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "/") {
			if ip := net.ParseIP(part); ip != nil {
				bits := 32
				if ip.To4() == nil {
					bits = 128
				}
				part = fmt.Sprintf("%s/%d", part, bits)
			}
		}
		_, n, err := net.ParseCIDR(part)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: not an address or CIDR range", part)
		}
		out = append(out, n)
	}
	return out, nil
}

// staticFiles serves the embedded assets without directory listings.
func staticFiles() http.Handler {
	files := http.FileServer(http.FS(static.FS))
	return http.StripPrefix("/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := strings.TrimPrefix(r.URL.Path, "/")
		if st, err := fs.Stat(static.FS, strings.TrimSuffix(p, "/")); p == "" || strings.HasSuffix(p, "/") || err != nil || st.IsDir() {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=300")
		files.ServeHTTP(w, r)
	}))
}

func bodyLimit(skip middleware.Skipper) echo.MiddlewareFunc {
	return middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: maxBody, Skipper: skip})
}

// errBusy answers one-off engine work (an export, a lesson page, a
// comparison) that found every work slot taken for workWait.
var errBusy = echo.NewHTTPError(http.StatusServiceUnavailable, "the server is busy with other requests: try again in a moment")

const workWait = 10 * time.Second

// withWork runs f in one of the server's work slots, shared fairly by
// the clients' addresses (workSlots), so a burst of expensive requests
// queues instead of piling up; f's context ends at the work timeout, and
// work stopped by it is told so.
func (s *Server) withWork(c echo.Context, f func(ctx context.Context) error) error {
	return s.inSlot(c.Request().Context(), clientOf(c), f)
}

// inSlot is withWork for a client address and context.
func (s *Server) inSlot(ctx context.Context, client string, f func(ctx context.Context) error) error {
	release, err := s.work.acquire(ctx, client, workWait)
	if errors.Is(err, errSlotWait) {
		return errBusy
	}
	if err != nil {
		return err
	}
	defer release()
	wctx, cancel := context.WithTimeoutCause(ctx, s.cfg.WorkTimeout, errWorkTimeout)
	defer cancel()
	err = f(wctx)
	if err != nil && context.Cause(wctx) == errWorkTimeout {
		s.log.Warn("engine work stopped at the work timeout", "client", client, "timeout", s.cfg.WorkTimeout)
		return fmt.Errorf("this request was stopped after %v of work, the most one request may take (--work-timeout): ask for less", s.cfg.WorkTimeout)
	}
	return err
}

// errWorkTimeout is the cause of a work context ended by the timeout.
var errWorkTimeout = errors.New("work timeout")

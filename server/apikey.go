package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"stepthrough/views"
)

// With --api-key, the pages that show or run API requests (/requests,
// /agent) ask for the key once, in a form posted to /api-key; the server
// answers with a cookie holding a signature of the key (never the key),
// so no link carries the key and it stays out of history and logs.
const apiKeyCookie = "stepthrough_api"

// apiKeyTTL is how long a browser that gave the key is believed.
const apiKeyTTL = 12 * time.Hour

// apiKeyToken is what the cookie holds: the key signed with the server's
// secret.
func (s *Server) apiKeyToken() string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte("api-key\x00" + s.cfg.API.Key))
	return hex.EncodeToString(m.Sum(nil))
}

// keyOK reports whether a page behind the API key may be shown: always
// without a key; with one, to a browser holding the cookie or a client
// sending the key as the API does (Authorization: Bearer).
func (s *Server) keyOK(c echo.Context) bool {
	key := s.cfg.API.Key
	if key == "" {
		return true
	}
	if got, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer "); ok && subtle.ConstantTimeCompare([]byte(got), []byte(key)) == 1 {
		return true
	}
	ck, err := c.Cookie(apiKeyCookie)
	return err == nil && subtle.ConstantTimeCompare([]byte(ck.Value), []byte(s.apiKeyToken())) == 1
}

// cacheScope names whose prompts a request may find in the prefix cache
// (serve.Request.CacheScope): with a key, everyone holding it (one key,
// one tenant); without, the client's address, so no one can learn from
// cached_tokens or from its time to first token what another address
// asked. A cache_salt narrows it further. The key is in it only through a
// MAC with the server's secret.
func (s *Server) cacheScope(c echo.Context, salt string) string {
	who := "address\x00" + clientOf(c)
	if s.cfg.API.Key != "" {
		who = "key\x00" + s.cfg.API.Key
	}
	return s.mac("prefix-cache", who+"\x00"+salt)
}

// keyPages are where the key form may send a browser back to.
var keyPages = []string{"/requests", "/agent", "/models"}

// askKey answers a page behind the key with the form that asks for it.
func (s *Server) askKey(c echo.Context, note string) error {
	next := c.Request().URL.Path
	if c.Request().URL.RawQuery != "" && c.QueryParam("key") == "" {
		next += "?" + c.Request().URL.RawQuery
	}
	return renderPageStatus(c, http.StatusUnauthorized, views.APIKeyPage(views.APIKeyForm{Next: next, Note: note, Nav: navOf(next)}))
}

// apiKeySubmit checks the key posted by the form and sets the cookie.
func (s *Server) apiKeySubmit(c echo.Context) error {
	next := c.FormValue("next")
	if !localPage(next) {
		next = "/requests"
	}
	key := s.cfg.API.Key
	if key == "" {
		return c.Redirect(http.StatusSeeOther, next)
	}
	if subtle.ConstantTimeCompare([]byte(c.FormValue("key")), []byte(key)) != 1 {
		return renderPageStatus(c, http.StatusUnauthorized, views.APIKeyPage(views.APIKeyForm{Next: next, Note: "That is not this server's API key.", Nav: navOf(next)}))
	}
	c.SetCookie(s.cookie(apiKeyCookie, s.apiKeyToken(), "/", apiKeyTTL, http.SameSiteStrictMode, c))
	return c.Redirect(http.StatusSeeOther, next)
}

// localPage reports a path under one of keyPages (no other host, no
// scheme), where the form may redirect.
func localPage(p string) bool {
	path, _, _ := strings.Cut(p, "?")
	for _, k := range keyPages {
		if path == k || strings.HasPrefix(path, k+"/") {
			return !strings.ContainsAny(path, `\`) && !strings.HasPrefix(path, "//")
		}
	}
	return false
}

// navOf is the site navigation's entry for a page behind the key.
func navOf(page string) string {
	for _, k := range keyPages {
		if strings.HasPrefix(page, k) {
			return k
		}
	}
	return "/requests"
}

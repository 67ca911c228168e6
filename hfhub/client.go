// Package hfhub fetches GGUF models from the Hugging Face Hub into the
// Hugging Face cache that huggingface_hub and llama.cpp share, and lists
// the models in it: what "stepthrough pull ORG/REPO[:QUANT]" does and what
// serve offers.
//
// It speaks the Hub's documented HTTP API: GET /api/models/REPO/revision/main
// lists a repository's files (with their sizes and hashes when asked for
// blobs), and /REPO/resolve/COMMIT/FILE gives a file's bytes; asked with
// HEAD, and redirects not followed, it answers X-Repo-Commit,
// X-Linked-Size, X-Linked-Etag (the sha256 of a large file) and the
// Location the bytes are served from, usually a CDN on another host.
//
// # Security
//
// The token ($HF_TOKEN, else the token file) is sent as
// "Authorization: Bearer" to the endpoint's scheme and host only, never to
// a host a redirect leads to: it is added by the transport per request,
// so a redirected request never inherits it. Everything the server
// answers is untrusted: JSON bodies are read up to a bound, file names
// are checked before they become paths, commit ids and hashes must be
// hex of their length, a file's bytes are hashed and compared with its
// sha256 before they are kept, and a GGUF header is judged from a bounded
// head before the rest of the file is fetched.
package hfhub

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultEndpoint is the Hub's address when HF_ENDPOINT is not set.
const DefaultEndpoint = "https://huggingface.co"

// Client fetches from one Hub endpoint into one cache. The zero values
// of its tuning fields take the defaults below.
type Client struct {
	Endpoint string // scheme://host[:port], no trailing slash
	Token    string // sent to the endpoint's host only; "" sends none
	Cache    Cache
	// Offline resolves every pull from the cache, making no request
	// (HF_HUB_OFFLINE=1).
	Offline bool
	// Transport carries the requests (nil: http.DefaultTransport's
	// settings); the token is added above it.
	Transport http.RoundTripper
	// Retries is how many times a request that failed for the network or
	// a server error (5xx, 429) is tried again before giving up; a
	// download that made progress starts counting again (0: 5).
	Retries int
	// Backoff is the first wait before a retry, doubled each time up to
	// 30 s (0: 1 s).
	Backoff time.Duration
	// Stall ends a download attempt that received no byte for this long
	// (0: 60 s); the attempt is retried.
	Stall time.Duration
	// HeadBytes is the first head read to judge a GGUF header (0: 4 MiB);
	// it doubles while the tensor infos go on, up to MaxHeadBytes (0:
	// 64 MiB).
	HeadBytes, MaxHeadBytes int64
	// OnRetry, when set, hears of each failed try before the wait for the
	// next (pull prints it: a slow or unreachable Hub is not silent).
	OnRetry func(err error, wait time.Duration)

	http *http.Client
}

// FromEnv makes a client as the Hub's own tools configure one: the
// endpoint from HF_ENDPOINT, the token from HF_TOKEN or else the token
// file ($HF_TOKEN_PATH, else $HF_HOME/token), the cache from CacheDir,
// offline when HF_HUB_OFFLINE is 1 (or true, yes, on).
func FromEnv() (*Client, error) {
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	c := &Client{Endpoint: strings.TrimRight(os.Getenv("HF_ENDPOINT"), "/"), Cache: Cache{dir}, Offline: envTrue("HF_HUB_OFFLINE")}
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	if c.Token, err = envToken(); err != nil {
		return nil, err
	}
	return c, nil
}

// envTrue reads a boolean variable as huggingface_hub does.
func envTrue(name string) bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(name))) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// envToken is $HF_TOKEN, else the token file's first line; none is "".
func envToken() (string, error) {
	if t := strings.TrimSpace(os.Getenv("HF_TOKEN")); t != "" {
		return t, nil
	}
	p := os.Getenv("HF_TOKEN_PATH")
	if p == "" {
		home, err := hfHome()
		if err != nil {
			return "", nil // no home, no token file: pull anonymously
		}
		p = filepath.Join(home, "token")
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("the Hugging Face token file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line), nil
}

// bearer adds the token to requests for the endpoint's scheme and host.
type bearer struct {
	base          http.RoundTripper
	scheme, host  string
	authorization string
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.authorization != "" && r.URL.Scheme == b.scheme && strings.EqualFold(r.URL.Host, b.host) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", b.authorization)
	}
	return b.base.RoundTrip(r)
}

// client is the HTTP client, built on first use: redirects are followed
// (up to 10) and the token is added per request by bearer.
func (c *Client) client() (*http.Client, error) {
	if c.http != nil {
		return c.http, nil
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("endpoint %.120q (HF_ENDPOINT) is not http(s)://HOST[:PORT]", c.Endpoint)
	}
	base := c.Transport
	if base == nil {
		base = &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout: 15 * time.Second, ResponseHeaderTimeout: 60 * time.Second, IdleConnTimeout: 90 * time.Second, ForceAttemptHTTP2: true}
	}
	b := &bearer{base: base, scheme: u.Scheme, host: u.Host}
	if c.Token != "" {
		b.authorization = "Bearer " + c.Token
	}
	c.http = &http.Client{Transport: b}
	return c.http, nil
}

// StatusError is a Hub request answered with an error status. It wraps
// ErrNotFound or ErrAccess where the status says which.
type StatusError struct {
	What   string // what was asked ("list the files of ORG/REPO")
	Status int
	Code   string // X-Error-Code: RepoNotFound, GatedRepo, EntryNotFound, …
	Msg    string // X-Error-Message, when the Hub gives one
	Token  bool   // whether a token was sent
	Page   string // the repository's page, where its terms are accepted
}

var (
	// ErrNotFound is a repository, revision or file that is not there.
	ErrNotFound = errors.New("not found")
	// ErrAccess is a repository the request may not read (gated, private).
	ErrAccess = errors.New("access denied")
)

func (e *StatusError) Unwrap() error {
	switch {
	case e.Code == "GatedRepo", e.Status == http.StatusForbidden, e.Status == http.StatusUnauthorized && e.Code != "RepoNotFound":
		return ErrAccess
	case e.Status == http.StatusNotFound, strings.HasSuffix(e.Code, "NotFound"):
		return ErrNotFound
	}
	return nil
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s: %s", e.What, http.StatusText(e.Status))
	if e.Msg != "" {
		msg += " (" + e.Msg + ")"
	}
	switch {
	case errors.Is(e, ErrAccess) && !e.Token:
		return msg + ": the repository is gated or private: set HF_TOKEN to a token of an account that has accepted its terms at " + e.Page
	case errors.Is(e, ErrAccess):
		return msg + ": your token may not read it: accept the repository's terms at " + e.Page + " with the token's account, or use a token with read access"
	}
	return msg
}

// statusError reads an error answer's status and the Hub's error headers.
func (c *Client) statusError(what, repo string, resp *http.Response) *StatusError {
	return &StatusError{What: what, Status: resp.StatusCode, Code: resp.Header.Get("X-Error-Code"), Msg: oneLine(resp.Header.Get("X-Error-Message"), 200),
		Token: c.Token != "", Page: c.Endpoint + "/" + repo}
}

// oneLine cuts a server's text to one line of at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// retryable reports whether a status is worth asking again.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// retry runs try until it succeeds, fails for good, or has failed
// Retries times in a row without progress, waiting Backoff (doubling)
// between tries. try reports whether it made progress and whether its
// error may pass with another try.
func (c *Client) retry(ctx context.Context, try func() (progress, again bool, err error)) error {
	tries, wait, retries := 0, cmp.Or(c.Backoff, time.Second), cmp.Or(c.Retries, 5)
	for {
		progress, again, err := try()
		if err == nil || !again {
			return err
		}
		if progress {
			tries, wait = 0, cmp.Or(c.Backoff, time.Second)
		}
		if tries++; tries > retries {
			return c.gaveUp(err, tries)
		}
		if c.OnRetry != nil {
			c.OnRetry(err, wait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (stopped retrying: %w)", err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// gaveUp is the error after the last try; one that never reached the
// Hub says where it was looking and how to work without it.
func (c *Client) gaveUp(err error, tries int) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%w (gave up after %d tries: is %s reachable? HF_ENDPOINT sets the Hub's address; HF_HUB_OFFLINE=1 uses the cache alone)", err, tries, c.Endpoint)
	}
	return fmt.Errorf("%w (gave up after %d tries)", err, tries)
}

// maxJSON bounds a JSON answer: a repository's file list is kilobytes.
const maxJSON = 16 << 20

// getJSON GETs an API path into v, retrying network and server errors.
func (c *Client) getJSON(ctx context.Context, what, repo, apiPath string, v any) error {
	hc, err := c.client()
	if err != nil {
		return err
	}
	return c.retry(ctx, func() (bool, bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Endpoint+apiPath, nil)
		if err != nil {
			return false, false, fmt.Errorf("%s: %w", what, err)
		}
		req.Header.Set("Accept", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return false, ctx.Err() == nil, fmt.Errorf("%s: %w", what, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, retryable(resp.StatusCode), c.statusError(what, repo, resp)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxJSON+1))
		if err != nil {
			return false, ctx.Err() == nil, fmt.Errorf("%s: %w", what, err)
		}
		if len(body) > maxJSON {
			return false, false, fmt.Errorf("%s: the answer is over %d MiB", what, maxJSON>>20)
		}
		if err := json.Unmarshal(body, v); err != nil {
			return false, false, fmt.Errorf("%s: the answer is not the API's JSON: %w", what, err)
		}
		return false, false, nil
	})
}

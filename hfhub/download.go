package hfhub

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// remote is what the resolve URL says of a file.
type remote struct {
	Repo   string
	File   string // its path in the repository
	Commit string
	SHA256 string // X-Linked-Etag: the hash its bytes must have
	Size   int64
	URL    string // the resolve URL pinned to the commit; its bytes may be redirected elsewhere
}

// resolveURL is /REPO/resolve/COMMIT/FILE on the endpoint.
func (c *Client) resolveURL(repo, commit, file string) string {
	segs := strings.Split(file, "/")
	for i := range segs {
		segs[i] = url.PathEscape(segs[i])
	}
	return c.Endpoint + "/" + repo + "/resolve/" + commit + "/" + strings.Join(segs, "/")
}

// stat asks the resolve URL with HEAD, not following redirects except
// those that stay on the endpoint (a renamed repository), as
// huggingface_hub does: the answer that sends the bytes to another host
// carries the file's commit, size and sha256.
func (c *Client) stat(ctx context.Context, repo, commit, file string) (remote, error) {
	if _, err := c.client(); err != nil {
		return remote{}, err
	}
	noRedirect := &http.Client{Transport: c.http.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r := remote{Repo: repo, File: file, Commit: commit, URL: c.resolveURL(repo, commit, file)}
	what := "look up " + repo + "/" + file
	var resp *http.Response
	err := c.retry(ctx, func() (bool, bool, error) {
		u := r.URL
		for hops := 0; ; hops++ {
			req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
			if err != nil {
				return false, false, fmt.Errorf("%s: %w", what, err)
			}
			req.Header.Set("Accept-Encoding", "identity")
			if resp, err = noRedirect.Do(req); err != nil {
				return false, ctx.Err() == nil, fmt.Errorf("%s: %w", what, err)
			}
			resp.Body.Close()
			next, err := resp.Location()
			if resp.StatusCode/100 != 3 || err != nil || resp.Header.Get("X-Linked-Etag") != "" || !c.onEndpoint(next) {
				break
			}
			if hops == 5 {
				return false, false, fmt.Errorf("%s: more than 5 redirects on %s", what, c.Endpoint)
			}
			u = next.String()
		}
		if resp.StatusCode/100 != 2 && resp.StatusCode/100 != 3 {
			return false, retryable(resp.StatusCode), c.statusError(what, repo, resp)
		}
		return false, false, nil
	})
	if err != nil {
		return remote{}, err
	}
	return r, r.read(resp.Header, resp.ContentLength, what)
}

// read takes a resolve answer's headers: the commit, the size and the
// sha256, each checked.
func (r *remote) read(h http.Header, length int64, what string) error {
	if c := h.Get("X-Repo-Commit"); c != "" {
		if err := checkCommit(c); err != nil {
			return fmt.Errorf("%s: X-Repo-Commit: %w", what, err)
		}
		r.Commit = c
	}
	etag := h.Get("X-Linked-Etag")
	if etag == "" {
		etag = h.Get("ETag")
	}
	r.SHA256 = strings.ToLower(strings.Trim(strings.TrimPrefix(etag, "W/"), `"`))
	if !isHex(r.SHA256, 64) {
		return fmt.Errorf("%s: the Hub gives no sha256 to check its bytes against (X-Linked-Etag %.80q): only files stored with Git LFS can be pulled", what, etag)
	}
	r.Size = length
	if s := h.Get("X-Linked-Size"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: X-Linked-Size %.40q is not a size", what, s)
		}
		r.Size = n
	}
	if r.Size <= 0 {
		return fmt.Errorf("%s: the Hub gives no size", what)
	}
	return nil
}

// onEndpoint reports whether u is on the endpoint's scheme and host.
func (c *Client) onEndpoint(u *url.URL) bool {
	e, err := url.Parse(c.Endpoint)
	return err == nil && u.Scheme == e.Scheme && strings.EqualFold(u.Host, e.Host)
}

// ChecksumError is a download whose bytes do not hash to the sha256 the
// Hub announced; the partial file has been deleted.
type ChecksumError struct {
	File, Want, Got string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("%s: the bytes fetched have sha256 %s but the Hub's X-Linked-Etag says %s: the download was deleted; pull again", e.File, e.Got, e.Want)
}

// DiskFullError is a download stopped because its disk is full; the part
// fetched is kept, and a later pull continues it.
type DiskFullError struct {
	Path        string
	Have, Total int64
	Err         error
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("disk full writing %s (%s of %s fetched, %s more needed): free space and pull again to continue", e.Path, Size(e.Have), Size(e.Total), Size(e.Total-e.Have))
}

func (e *DiskFullError) Unwrap() error { return e.Err }

// errStalled ends an attempt that received nothing for Client.Stall.
var errStalled = errors.New("no byte received")

// fetch downloads a file's bytes into its blob, continuing
// blobs/SHA256.incomplete where an earlier attempt (or an earlier
// process) stopped, and keeps them only when they hash to r.SHA256. It
// returns the bytes received now and those an earlier attempt had
// fetched and this one kept.
func (c *Client) fetch(ctx context.Context, repo string, r remote, progress func(done, total int64)) (fetched, resumed int64, err error) {
	blob := c.Cache.blob(repo, r.SHA256)
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return 0, 0, fmt.Errorf("the cache's blobs of %s: %w", repo, err)
	}
	part := blob + ".incomplete"
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", r.File, err)
	}
	defer f.Close()
	if err := lock(f); err != nil {
		return 0, 0, fmt.Errorf("%s: another pull is fetching it (%s is locked): %w", r.File, part, err)
	}
	d := &download{f: f, path: part, h: sha256.New(), r: r, progress: progress}
	if err := d.resume(); err != nil {
		return 0, 0, err
	}
	err = c.retry(ctx, func() (bool, bool, error) {
		before := d.received
		again, err := c.attempt(ctx, d)
		return d.received > before, again, err
	})
	if err != nil && ctx.Err() != nil {
		return d.received, d.kept, fmt.Errorf("%s: stopped after %s of %s, kept in %s: pull again to continue (%w)", r.File, Size(d.have), Size(r.Size), part, ctx.Err())
	}
	if err != nil {
		return d.received, d.kept, fmt.Errorf("%s: %w", r.File, err)
	}
	if got := hex.EncodeToString(d.h.Sum(nil)); got != r.SHA256 {
		f.Close()
		os.Remove(part)
		return d.received, d.kept, &ChecksumError{File: r.File, Want: r.SHA256, Got: got}
	}
	if err := f.Sync(); err != nil {
		return d.received, d.kept, fmt.Errorf("%s: %w", part, err)
	}
	f.Close()
	if err := os.Rename(part, blob); err != nil {
		return d.received, d.kept, fmt.Errorf("%s: %w", r.File, err)
	}
	return d.received, d.kept, nil
}

// download is one file being fetched: the partial file, the hash of what
// it holds, and how much that is.
type download struct {
	f        *os.File
	path     string
	h        hash.Hash
	have     int64 // bytes in the partial file
	kept     int64 // of those, bytes an earlier attempt had fetched
	received int64 // bytes received by this process
	r        remote
	progress func(done, total int64)
}

// resume hashes what an earlier attempt left; a part longer than the
// file is started again.
func (d *download) resume() error {
	st, err := d.f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", d.path, err)
	}
	if st.Size() > d.r.Size {
		return d.restart()
	}
	if _, err := io.Copy(d.h, io.NewSectionReader(d.f, 0, st.Size())); err != nil {
		return fmt.Errorf("reading %s to continue it: %w", d.path, err)
	}
	d.have, d.kept = st.Size(), st.Size()
	return nil
}

// restart empties the partial file.
func (d *download) restart() error {
	if err := d.f.Truncate(0); err != nil {
		return fmt.Errorf("%s: %w", d.path, err)
	}
	d.h.Reset()
	d.have, d.kept = 0, 0
	return nil
}

// write appends bytes received to the partial file and its hash.
func (d *download) write(b []byte) error {
	if d.have+int64(len(b)) > d.r.Size {
		return fmt.Errorf("the server sent more than the file's %d bytes", d.r.Size)
	}
	if _, err := d.f.WriteAt(b, d.have); err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return &DiskFullError{Path: d.path, Have: d.have, Total: d.r.Size, Err: err}
		}
		return fmt.Errorf("writing %s: %w", d.path, err)
	}
	d.h.Write(b)
	d.have += int64(len(b))
	d.received += int64(len(b))
	if d.progress != nil {
		d.progress(d.have, d.r.Size)
	}
	return nil
}

// attempt is one GET of the rest of the file (Range: bytes=HAVE-),
// following redirects (the token goes to the endpoint's host only). A
// server that answers 200 to a range is read from the start again. It
// reports whether its error may pass with another attempt.
func (c *Client) attempt(ctx context.Context, d *download) (again bool, err error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := cmp.Or(c.Stall, 60*time.Second)
	timer := time.AfterFunc(stall, func() { cancel(fmt.Errorf("%w for %s", errStalled, stall)) })
	defer timer.Stop()
	req, err := http.NewRequestWithContext(actx, http.MethodGet, d.r.URL, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept-Encoding", "identity")
	if d.have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", d.have))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("fetching: %w", cause(actx, err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent:
		if start, ok := rangeStart(resp.Header.Get("Content-Range")); !ok || start != d.have {
			return false, fmt.Errorf("asked for the bytes from %d, the server sent %.80q", d.have, resp.Header.Get("Content-Range"))
		}
	case resp.StatusCode == http.StatusOK:
		if d.have > 0 { // the server does not resume: start again
			if err := d.restart(); err != nil {
				return false, err
			}
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return true, errors.Join(fmt.Errorf("the server has no bytes from %d: starting again", d.have), d.restart())
	default:
		return retryable(resp.StatusCode), c.statusError("fetch "+d.r.Repo+"/"+d.r.File, d.r.Repo, resp)
	}
	buf := make([]byte, 256<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			timer.Reset(stall)
			if err := d.write(buf[:n]); err != nil {
				return false, err
			}
		}
		switch {
		case rerr == io.EOF && d.have < d.r.Size:
			return true, fmt.Errorf("the connection closed after %s of %s", Size(d.have), Size(d.r.Size))
		case rerr == io.EOF:
			return false, nil
		case rerr != nil:
			return ctx.Err() == nil, fmt.Errorf("the connection broke after %s of %s: %w", Size(d.have), Size(d.r.Size), cause(actx, rerr))
		}
	}
}

// cause is the reason an attempt's context ended (a stall), else err.
func cause(ctx context.Context, err error) error {
	if c := context.Cause(ctx); errors.Is(c, errStalled) {
		return c
	}
	return err
}

// rangeStart reads the first byte of "bytes START-END/TOTAL".
func rangeStart(cr string) (int64, bool) {
	spec, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return 0, false
	}
	first, _, ok := strings.Cut(spec, "-")
	n, err := strconv.ParseInt(first, 10, 64)
	return n, ok && err == nil
}

// Package hubtest is a fake Hugging Face Hub for tests: the API and the
// resolve URLs on one server, the bytes on a second (the CDN) that the
// resolve URLs redirect to, with the headers huggingface.co answers
// (X-Repo-Commit, X-Linked-Etag, X-Linked-Size, X-Error-Code) and Range
// requests. A test sets how it misbehaves (a dropped or stalled
// connection, Range ignored, a lying checksum, a gated repository) and
// reads what it was asked.
package hubtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Hub is the fake Hub.
type Hub struct {
	API, CDN *httptest.Server

	mu      sync.Mutex
	repos   map[string]*repo
	log     []Request
	cdnBase string
	token   string
	cuts    int
	stalls  int
	cutAt   int
	noRange bool
}

// Request is one request as the fake Hub received it.
type Request struct {
	Server       string // "api" or "cdn"
	Method, Path string
	Range, Auth  string // the Range and Authorization headers
}

// repo is a repository at one commit.
type repo struct {
	commit string
	files  map[string][]byte
	gated  bool
	lie    map[string]string // a file's announced sha256, when it lies
}

// New starts a fake Hub, closed when the test ends.
func New(t testing.TB) *Hub {
	h := &Hub{repos: map[string]*repo{}}
	h.API = httptest.NewServer(http.HandlerFunc(h.serveAPI))
	h.CDN = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	h.cdnBase = h.CDN.URL
	t.Cleanup(func() { h.API.Close(); h.CDN.Close() })
	return h
}

// URL is the endpoint: what HF_ENDPOINT would be.
func (h *Hub) URL() string { return h.API.URL }

// RedirectTo sets the base URL the resolve URLs redirect to (default the
// CDN server's own), for a client that reaches the CDN by another name.
func (h *Hub) RedirectTo(base string) { h.locked(func() { h.cdnBase = base }) }

// Add puts a repository on the Hub at a commit derived from its name,
// and returns that commit.
func (h *Hub) Add(name string, files map[string][]byte) string {
	sum := sha256.Sum256([]byte(name))
	r := &repo{commit: hex.EncodeToString(sum[:20]), files: files, lie: map[string]string{}}
	h.locked(func() { h.repos[name] = r })
	return r.commit
}

// Gate makes a repository answer 401 GatedRepo unless asked with
// "Authorization: Bearer TOKEN".
func (h *Hub) Gate(name, token string) {
	h.locked(func() { h.repos[name].gated, h.token = true, token })
}

// Lie makes the Hub announce sha256 for a file instead of its bytes'.
func (h *Hub) Lie(name, file, sha256 string) { h.locked(func() { h.repos[name].lie[file] = sha256 }) }

// Cut makes the next n answers to a download (no Range, or an open one:
// bytes=N-) drop the connection after at bytes of their body.
func (h *Hub) Cut(n, at int) { h.locked(func() { h.cuts, h.cutAt = n, at }) }

// Stall makes the next n answers to a download stop sending after at
// bytes, until the client gives up.
func (h *Hub) Stall(n, at int) { h.locked(func() { h.stalls, h.cutAt = n, at }) }

// IgnoreRange makes the CDN answer every request with the whole file
// (200), as a server without Range does.
func (h *Hub) IgnoreRange() { h.locked(func() { h.noRange = true }) }

// Requests returns what the Hub was asked since the last call.
func (h *Hub) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.log
	h.log = nil
	return l
}

func (h *Hub) locked(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f()
}

func (h *Hub) record(server string, r *http.Request) {
	h.locked(func() {
		h.log = append(h.log, Request{server, r.Method, r.URL.Path, r.Header.Get("Range"), r.Header.Get("Authorization")})
	})
}

// lookup reads a repository, the token and the CDN's address under the lock.
func (h *Hub) lookup(name string) (rp *repo, ok bool, token, base string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	rp, ok = h.repos[name]
	return rp, ok, h.token, h.cdnBase
}

// serveAPI answers the listing (/api/models/REPO/revision/main?blobs=true)
// and the resolve URLs, with the Hub's error codes for a missing and a
// gated repository.
func (h *Hub) serveAPI(w http.ResponseWriter, r *http.Request) {
	h.record("api", r)
	p, isAPI := strings.CutPrefix(r.URL.Path, "/api/models/")
	if !isAPI {
		p = strings.TrimPrefix(r.URL.Path, "/")
	}
	name, rest := splitRepo(p)
	rp, ok, token, base := h.lookup(name)
	switch {
	case !ok:
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "Repository not found", http.StatusNotFound)
		return
	case rp.gated && r.Header.Get("Authorization") != "Bearer "+token:
		w.Header().Set("X-Error-Code", "GatedRepo")
		w.Header().Set("X-Error-Message", "Access to model "+name+" is restricted.")
		http.Error(w, "gated", http.StatusUnauthorized)
		return
	}
	if isAPI {
		if rest != "revision/main" || r.URL.Query().Get("blobs") != "true" {
			http.NotFound(w, r)
			return
		}
		list(w, rp)
		return
	}
	commit, file, _ := strings.Cut(strings.TrimPrefix(rest, "resolve/"), "/")
	data, ok := rp.files[file]
	if !ok || commit != rp.commit && commit != "main" {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.NotFound(w, r)
		return
	}
	sum := sha(data)
	etag := sum
	h.locked(func() {
		if lie, ok := rp.lie[file]; ok {
			etag = lie
		}
	})
	w.Header().Set("X-Repo-Commit", rp.commit)
	w.Header().Set("X-Linked-Etag", `"`+etag+`"`)
	w.Header().Set("X-Linked-Size", strconv.Itoa(len(data)))
	w.Header().Set("Location", base+"/"+name+"/"+sum)
	w.WriteHeader(http.StatusFound)
}

// splitRepo cuts ORG/REPO off a path.
func splitRepo(p string) (name, rest string) {
	parts := strings.SplitN(p, "/", 3)
	if len(parts) < 3 {
		return p, ""
	}
	return parts[0] + "/" + parts[1], parts[2]
}

// list writes the revision's JSON as the Hub does with blobs=true.
func list(w http.ResponseWriter, rp *repo) {
	type lfs struct {
		Size   int    `json:"size"`
		SHA256 string `json:"sha256"`
	}
	type sibling struct {
		Name string `json:"rfilename"`
		Size int    `json:"size"`
		LFS  lfs    `json:"lfs"`
	}
	out := struct {
		SHA      string    `json:"sha"`
		Siblings []sibling `json:"siblings"`
	}{SHA: rp.commit}
	for name, data := range rp.files {
		out.Siblings = append(out.Siblings, sibling{name, len(data), lfs{len(data), sha(data)}})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// serveCDN serves a file's bytes by hash, honouring Range (bytes=N- and
// bytes=N-M) unless told to ignore it, and cutting or stalling as set.
func (h *Hub) serveCDN(w http.ResponseWriter, r *http.Request) {
	h.record("cdn", r)
	name, sum := splitRepo(strings.TrimPrefix(r.URL.Path, "/"))
	var data []byte
	var noRange bool
	h.locked(func() {
		if rp, ok := h.repos[name]; ok {
			for _, d := range rp.files {
				if sha(d) == sum {
					data = d
				}
			}
		}
		noRange = h.noRange
	})
	if data == nil {
		http.NotFound(w, r)
		return
	}
	start, end, status := 0, len(data), http.StatusOK
	rg := r.Header.Get("Range")
	if rg != "" && !noRange {
		from, to, _ := strings.Cut(strings.TrimPrefix(rg, "bytes="), "-")
		start, _ = strconv.Atoi(from)
		if to != "" {
			n, _ := strconv.Atoi(to)
			end = min(n+1, len(data))
		}
		if start >= len(data) || start > end {
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		status = http.StatusPartialContent
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, len(data)))
	}
	body := data[start:end]
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	var cut, stall bool
	var at int
	h.locked(func() {
		download := (rg == "" || strings.HasSuffix(rg, "-")) && len(body) > h.cutAt // not a header's bounded range
		cut, stall, at = download && h.cuts > 0, download && h.cuts == 0 && h.stalls > 0, h.cutAt
		switch {
		case cut:
			h.cuts--
		case stall:
			h.stalls--
		}
	})
	if cut || stall {
		w.Write(body[:at])
		w.(http.Flusher).Flush()
		if stall {
			<-r.Context().Done()
		}
		panic(http.ErrAbortHandler) // the connection drops mid-body
	}
	w.Write(body)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

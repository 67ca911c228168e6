package hfhub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// fakeHub speaks the Hub's API on one host (hub.test) and serves the
// bytes from another (cdn.test) that its resolve URLs redirect to, with
// Range requests, as huggingface.co and its CDN do. Tests set how it
// misbehaves and read what it was asked.
type fakeHub struct {
	t        *testing.T
	api, cdn *httptest.Server

	mu    sync.Mutex
	repos map[string]*fakeRepo
	log   []seen
	token string // the token a gated repository asks for
	// cuts is how many CDN answers to a download drop the connection
	// after cutAt bytes of their body; stalls, how many stop sending
	// there until the client gives up.
	cuts, stalls int
	cutAt        int
	noRange      bool // the CDN ignores Range and answers 200
}

// fakeRepo is a repository at one commit.
type fakeRepo struct {
	commit string
	files  map[string][]byte
	gated  bool
	lie    map[string]string // a file's announced sha256, when it lies
}

// seen is one request as the fake Hub received it.
type seen struct {
	host, method, path, rng, auth string
}

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{t: t, repos: map[string]*fakeRepo{}}
	h.api = httptest.NewServer(http.HandlerFunc(h.serveAPI))
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	t.Cleanup(func() { h.api.Close(); h.cdn.Close() })
	return h
}

// client is a client of the fake Hub with an empty cache, reaching
// hub.test and cdn.test on the test servers.
func (h *fakeHub) client(t *testing.T) *Client {
	addrs := map[string]string{"hub.test:80": h.api.Listener.Addr().String(), "cdn.test:80": h.cdn.Listener.Addr().String()}
	dial := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		a, ok := addrs[addr]
		if !ok {
			return nil, fmt.Errorf("the test reaches only hub.test and cdn.test, not %s", addr)
		}
		return dial.DialContext(ctx, network, a)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &Client{Endpoint: "http://hub.test", Cache: Cache{t.TempDir()}, Transport: tr, Backoff: time.Millisecond}
}

// add puts a repository on the fake Hub.
func (h *fakeHub) add(repo string, files map[string][]byte) *fakeRepo {
	sum := sha256.Sum256([]byte(repo))
	r := &fakeRepo{commit: hex.EncodeToString(sum[:20]), files: files, lie: map[string]string{}}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.repos[repo] = r
	return r
}

// requests is what the fake Hub was asked since the last call.
func (h *fakeHub) requests() []seen {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.log
	h.log = nil
	return l
}

func (h *fakeHub) record(host string, r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = append(h.log, seen{host, r.Method, r.URL.Path, r.Header.Get("Range"), r.Header.Get("Authorization")})
}

// serveAPI answers the listing and the resolve URLs, with the Hub's
// error codes for a missing and a gated repository.
func (h *fakeHub) serveAPI(w http.ResponseWriter, r *http.Request) {
	h.record("hub.test", r)
	if r.Host != "hub.test" {
		http.Error(w, "wrong host "+r.Host, http.StatusMisdirectedRequest)
		return
	}
	var repoName, rest string
	isAPI := false
	if p, ok := strings.CutPrefix(r.URL.Path, "/api/models/"); ok {
		isAPI = true
		repoName, rest = splitRepo(p)
	} else {
		repoName, rest = splitRepo(strings.TrimPrefix(r.URL.Path, "/"))
	}
	h.mu.Lock()
	repo, ok := h.repos[repoName]
	token := h.token
	h.mu.Unlock()
	switch {
	case !ok:
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "Repository not found", http.StatusNotFound)
		return
	case repo.gated && r.Header.Get("Authorization") != "Bearer "+token:
		w.Header().Set("X-Error-Code", "GatedRepo")
		w.Header().Set("X-Error-Message", "Access to model "+repoName+" is restricted.")
		http.Error(w, "gated", http.StatusUnauthorized)
		return
	}
	if isAPI {
		if rest != "revision/main" || r.URL.Query().Get("blobs") != "true" {
			http.NotFound(w, r)
			return
		}
		h.list(w, repo)
		return
	}
	commit, file, _ := strings.Cut(strings.TrimPrefix(rest, "resolve/"), "/")
	data, ok := repo.files[file]
	if !ok || commit != repo.commit && commit != "main" {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.NotFound(w, r)
		return
	}
	sum := sha256.Sum256(data)
	etag := hex.EncodeToString(sum[:])
	if lie, ok := repo.lie[file]; ok {
		etag = lie
	}
	w.Header().Set("X-Repo-Commit", repo.commit)
	w.Header().Set("X-Linked-Etag", `"`+etag+`"`)
	w.Header().Set("X-Linked-Size", strconv.Itoa(len(data)))
	w.Header().Set("Location", "http://cdn.test/"+repoName+"/"+hex.EncodeToString(sum[:]))
	w.WriteHeader(http.StatusFound)
}

// splitRepo cuts ORG/REPO off a path.
func splitRepo(p string) (repo, rest string) {
	parts := strings.SplitN(p, "/", 3)
	if len(parts) < 3 {
		return p, ""
	}
	return parts[0] + "/" + parts[1], parts[2]
}

// list writes the revision's JSON as the Hub does with blobs=true.
func (h *fakeHub) list(w http.ResponseWriter, repo *fakeRepo) {
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
		ID       string    `json:"id"`
		SHA      string    `json:"sha"`
		Siblings []sibling `json:"siblings"`
	}{SHA: repo.commit}
	for name, data := range repo.files {
		sum := sha256.Sum256(data)
		out.Siblings = append(out.Siblings, sibling{name, len(data), lfs{len(data), hex.EncodeToString(sum[:])}})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// serveCDN serves a file's bytes by hash, honouring Range (bytes=N- and
// bytes=N-M) unless noRange, and cutting or stalling as set.
func (h *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	h.record("cdn.test", r)
	repoName, sum := splitRepo(strings.TrimPrefix(r.URL.Path, "/"))
	h.mu.Lock()
	var data []byte
	if repo, ok := h.repos[repoName]; ok {
		for _, d := range repo.files {
			if s := sha256.Sum256(d); hex.EncodeToString(s[:]) == sum {
				data = d
			}
		}
	}
	noRange := h.noRange
	h.mu.Unlock()
	if data == nil {
		http.NotFound(w, r)
		return
	}
	start, end, status := 0, len(data), http.StatusOK
	if rg := r.Header.Get("Range"); rg != "" && !noRange {
		from, to, _ := strings.Cut(strings.TrimPrefix(rg, "bytes="), "-")
		start, _ = strconv.Atoi(from)
		if to != "" {
			n, _ := strconv.Atoi(to)
			end = min(n+1, len(data))
		}
		if start >= len(data) {
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		status = http.StatusPartialContent
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, len(data)))
	}
	body := data[start:end]
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	h.mu.Lock()
	rg := r.Header.Get("Range")
	download := (rg == "" || strings.HasSuffix(rg, "-")) && len(body) > h.cutAt // not a header's bounded range
	cut, stall := download && h.cuts > 0, download && h.cuts == 0 && h.stalls > 0
	switch {
	case cut:
		h.cuts--
	case stall:
		h.stalls--
	}
	cutAt := h.cutAt
	h.mu.Unlock()
	if cut || stall {
		w.Write(body[:cutAt])
		w.(http.Flusher).Flush()
		if stall {
			<-r.Context().Done()
		}
		panic(http.ErrAbortHandler) // the connection drops mid-body
	}
	w.Write(body)
}

// ggufModel is a small model the engine runs, as a GGUF file's bytes
// (about 200 KB); seed varies its weights.
func ggufModel(t *testing.T, seed uint64) []byte {
	t.Helper()
	w, err := model.Synthesize(model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 2, FFN: 64, Vocab: 700, Context: 64, Type: quant.Q8_0, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return w.Bytes()
}

// ggufOf is a model of an architecture the engine does not run, written
// by the same writer.
func ggufOf(t *testing.T, arch string) []byte {
	t.Helper()
	w, err := model.Synthesize(model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 2, FFN: 64, Vocab: 700, Context: 64, Type: quant.Q8_0})
	if err != nil {
		t.Fatal(err)
	}
	w.MustSet("general.architecture", arch)
	return w.Bytes()
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

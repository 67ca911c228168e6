package hfhub

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"stepthrough/hfhub/hubtest"
)

// pull pulls a written reference with the client.
func pull(t *testing.T, c *Client, ref string) (*Result, error) {
	t.Helper()
	r, err := ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	return c.Pull(context.Background(), Request{Ref: r}, Options{})
}

// The file lands in the layout huggingface_hub and llama.cpp share: its
// bytes in blobs/SHA256, a relative link from snapshots/COMMIT/FILE, the
// commit in refs/main, nothing partial left.
func TestPullFetchesIntoTheCacheLayout(t *testing.T) {
	hub, c := newHub(t)
	q8, q4 := ggufModel(t, 1), ggufModel(t, 2)
	commit := hub.Add("org/tiny-GGUF", map[string][]byte{"tiny-Q8_0.gguf": q8, "tiny-Q4_0.gguf": q4, "README.md": []byte("# tiny")})
	res, err := pull(t, c, "org/tiny-GGUF")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(c.Cache.Dir, "models--org--tiny-GGUF")
	want := &Result{Repo: "org/tiny-GGUF", File: "tiny-Q8_0.gguf", Commit: commit, Size: int64(len(q8)), Why: "Q8_0, the default",
		Path: filepath.Join(dir, "snapshots", commit, "tiny-Q8_0.gguf"), Name: "org/tiny-GGUF:Q8_0", Fetched: int64(len(q8))}
	if d := cmp.Diff(want, res); d != "" {
		t.Errorf("result (-want +got):\n%s", d)
	}
	link, err := os.Readlink(res.Path)
	if err != nil || link != filepath.Join("..", "..", "blobs", sha(q8)) {
		t.Errorf("the snapshot's file links to %q (%v), want ../../blobs/%s", link, err, sha(q8))
	}
	if got, err := os.ReadFile(res.Path); err != nil || !bytes.Equal(got, q8) {
		t.Errorf("the linked blob holds %d bytes (%v), want the file's %d", len(got), err, len(q8))
	}
	if ref, err := os.ReadFile(filepath.Join(dir, "refs", "main")); err != nil || string(ref) != commit {
		t.Errorf("refs/main = %q (%v), want %s", ref, err, commit)
	}
	blobs, _ := os.ReadDir(filepath.Join(dir, "blobs"))
	if len(blobs) != 1 || blobs[0].Name() != sha(q8) {
		t.Errorf("blobs/ holds %v, want only %s", blobs, sha(q8))
	}
	// the quantization asked for, case-insensitively
	res, err = pull(t, c, "org/tiny-GGUF:q4_0")
	if err != nil || res.File != "tiny-Q4_0.gguf" || res.Name != "org/tiny-GGUF:Q4_0" {
		t.Errorf("pull :q4_0 = %+v, %v", res, err)
	}
}

// A file the snapshot holds is not fetched again: one listing, no HEAD,
// nothing from the CDN.
func TestPullDoesNotFetchAgain(t *testing.T) {
	hub, c := newHub(t)
	hub.Add("org/tiny-GGUF", map[string][]byte{"tiny-Q8_0.gguf": ggufModel(t, 1)})
	if _, err := pull(t, c, "org/tiny-GGUF"); err != nil {
		t.Fatal(err)
	}
	hub.Requests()
	res, err := pull(t, c, "org/tiny-GGUF:Q8_0")
	if err != nil {
		t.Fatal(err)
	}
	if res.Fetched != 0 {
		t.Errorf("fetched %d bytes again", res.Fetched)
	}
	want := []hubtest.Request{{Server: "api", Method: "GET", Path: "/api/models/org/tiny-GGUF/revision/main"}}
	if d := cmp.Diff(want, hub.Requests()); d != "" {
		t.Errorf("requests of the second pull (-want +got):\n%s", d)
	}
}

// A connection dropped mid-body is continued from where it broke with
// Range: bytes=N-, and so is one that stalls.
func TestPullResumesAfterACutConnection(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cuts, stall int
		want        []string // the CDN requests' ranges after the header's
	}{
		{"cut", 1, 0, []string{"", "bytes=50000-"}},
		{"cut twice", 2, 0, []string{"", "bytes=50000-", "bytes=100000-"}},
		{"stall", 0, 1, []string{"", "bytes=50000-"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hub, c := newHub(t)
			data := ggufModel(t, 1)
			if len(data) < 3*50_000 {
				t.Fatalf("the model is %d bytes: too small to cut twice", len(data))
			}
			hub.Add("org/tiny-GGUF", map[string][]byte{"tiny-Q8_0.gguf": data})
			hub.Cut(tc.cuts, 50_000)
			hub.Stall(tc.stall, 50_000)
			c.Stall = 200 * time.Millisecond
			res, err := pull(t, c, "org/tiny-GGUF")
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(res.Path); !bytes.Equal(got, data) {
				t.Fatalf("the pulled file differs from the Hub's")
			}
			want := append([]string{"bytes=0-" + strconv.Itoa(len(data)-1)}, tc.want...)
			if d := cmp.Diff(want, cdnRanges(hub)); d != "" {
				t.Errorf("CDN ranges (-want +got):\n%s", d)
			}
		})
	}
}

// A download a killed process left (blobs/SHA256.incomplete) is
// continued, not started again; a server that ignores Range restarts it.
func TestPullResumesAKilledDownload(t *testing.T) {
	for _, noRange := range []bool{false, true} {
		t.Run(map[bool]string{false: "range", true: "server ignores range"}[noRange], func(t *testing.T) {
			hub, c := newHub(t)
			data := ggufModel(t, 1)
			hub.Add("org/tiny-GGUF", map[string][]byte{"tiny-Q8_0.gguf": data})
			if noRange {
				hub.IgnoreRange()
			}
			part := c.Cache.blob("org/tiny-GGUF", sha(data)) + ".incomplete"
			os.MkdirAll(filepath.Dir(part), 0o755)
			if err := os.WriteFile(part, data[:123_456], 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := pull(t, c, "org/tiny-GGUF")
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(res.Path); !bytes.Equal(got, data) {
				t.Fatalf("the pulled file differs from the Hub's")
			}
			wantResumed, wantFetched, wantRange := int64(123_456), int64(len(data)-123_456), "bytes=123456-"
			if noRange { // the server's 200 started it again
				wantResumed, wantFetched = 0, int64(len(data))
			}
			if res.Resumed != wantResumed || res.Fetched != wantFetched {
				t.Errorf("resumed %d, fetched %d; want %d and %d", res.Resumed, res.Fetched, wantResumed, wantFetched)
			}
			ranges := cdnRanges(hub)
			if last := ranges[len(ranges)-1]; last != wantRange {
				t.Errorf("the download asked for %q, want %q", last, wantRange)
			}
			if _, err := os.Stat(part); !os.IsNotExist(err) {
				t.Errorf("the partial file is still there: %v", err)
			}
		})
	}
}

// Bytes that do not hash to the announced sha256 are refused, naming both
// hashes, and deleted: no blob, no partial file, no snapshot link.
func TestPullRefusesALyingChecksum(t *testing.T) {
	hub, c := newHub(t)
	data := ggufModel(t, 1)
	commit := hub.Add("org/tiny-GGUF", map[string][]byte{"tiny-Q8_0.gguf": data})
	lie := sha([]byte("other bytes"))
	hub.Lie("org/tiny-GGUF", "tiny-Q8_0.gguf", lie)
	_, err := pull(t, c, "org/tiny-GGUF")
	var ce *ChecksumError
	if !errors.As(err, &ce) || ce.Want != lie || ce.Got != sha(data) || !strings.Contains(err.Error(), lie) || !strings.Contains(err.Error(), sha(data)) {
		t.Fatalf("err = %v, want a checksum error naming %s and %s", err, lie, sha(data))
	}
	dir := c.Cache.repoDir("org/tiny-GGUF")
	for _, p := range []string{filepath.Join(dir, "blobs", lie), filepath.Join(dir, "blobs", lie+".incomplete"), filepath.Join(dir, "snapshots", commit, "tiny-Q8_0.gguf")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is there after a refused download (%v)", p, err)
		}
	}
}

// Offline, a pulled model is found from refs/main without any request;
// one that was never pulled is an error that says why.
func TestPullOffline(t *testing.T) {
	hub, c := newHub(t)
	hub.Add("org/tiny-GGUF", map[string][]byte{"tiny-Q8_0.gguf": ggufModel(t, 1), "tiny-Q4_0.gguf": ggufModel(t, 2)})
	online, err := pull(t, c, "org/tiny-GGUF")
	if err != nil {
		t.Fatal(err)
	}
	hub.Requests()
	c.Offline = true
	res, err := pull(t, c, "org/tiny-GGUF")
	if err != nil {
		t.Fatal(err)
	}
	online.Fetched = 0
	if d := cmp.Diff(online, res); d != "" {
		t.Errorf("offline result (-online +offline):\n%s", d)
	}
	for _, tc := range []struct{ ref, want string }{
		{"org/tiny-GGUF:Q4_0", "no Q4_0 file here (it has Q8_0"},
		{"org/other-GGUF", "org/other-GGUF is not in the cache"},
	} {
		if _, err := pull(t, c, tc.ref); err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("offline pull %s: %v, want HF_HUB_OFFLINE and %q", tc.ref, err, tc.want)
		}
	}
	if reqs := hub.Requests(); len(reqs) != 0 {
		t.Errorf("offline pulls made requests: %v", reqs)
	}
}

// The token goes to the endpoint's host and never to the CDN its
// redirects lead to; a gated repository without it is refused saying to
// set HF_TOKEN and accept the terms; a missing one says so.
func TestTokenAndGatedRepos(t *testing.T) {
	hub, c := newHub(t)
	data := ggufModel(t, 1)
	hub.Add("org/gated-GGUF", map[string][]byte{"gated-Q8_0.gguf": data})
	hub.Gate("org/gated-GGUF", "hf_secret")
	_, err := pull(t, c, "org/gated-GGUF")
	if !errors.Is(err, ErrAccess) || !strings.Contains(err.Error(), "set HF_TOKEN") || !strings.Contains(err.Error(), "accepted its terms at http://hub.test/org/gated-GGUF") {
		t.Errorf("gated without a token: %v", err)
	}
	c.Token = "hf_wrong"
	if _, err := pull(t, c, "org/gated-GGUF"); !errors.Is(err, ErrAccess) || !strings.Contains(err.Error(), "accept the repository's terms") {
		t.Errorf("gated with a token that may not read it: %v", err)
	}
	_, err = pull(t, c, "org/missing-GGUF")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no repository org/missing-GGUF on http://hub.test") {
		t.Errorf("a missing repository: %v", err)
	}
	hub.Requests()
	c = clientOf(t, hub)
	c.Token = "hf_secret"
	res, err := pull(t, c, "org/gated-GGUF")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(res.Path); !bytes.Equal(got, data) {
		t.Fatalf("the pulled file differs from the Hub's")
	}
	hosts := map[string]int{}
	for _, r := range hub.Requests() {
		hosts[r.Server]++
		if want := map[string]string{"api": "Bearer hf_secret", "cdn": ""}[r.Server]; r.Auth != want {
			t.Errorf("%s %s %s had Authorization %q, want %q", r.Method, r.Server, r.Path, r.Auth, want)
		}
	}
	if hosts["api"] == 0 || hosts["cdn"] == 0 {
		t.Errorf("requests by host: %v, want both", hosts)
	}
}

// A file whose header the engine cannot run is refused from its first
// bytes: only bounded ranges are read, growing while the tensor infos go
// on, and nothing is kept.
func TestPullChecksTheHeaderFirst(t *testing.T) {
	hub, c := newHub(t)
	bad, good := ggufOf(t, "mamba"), ggufModel(t, 1)
	hub.Add("org/mamba-GGUF", map[string][]byte{"mamba-Q8_0.gguf": bad})
	hub.Add("org/tiny-GGUF", map[string][]byte{"tiny-Q8_0.gguf": good})
	c.HeadBytes = 1 << 10
	_, err := pull(t, c, "org/mamba-GGUF")
	var ue *UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `architecture "mamba" is not supported`) || !strings.Contains(err.Error(), "mamba-Q8_0.gguf is not fetched") {
		t.Fatalf("err = %v, want the header refused", err)
	}
	ranges := cdnRanges(hub)
	if len(ranges) < 2 || ranges[0] != "bytes=0-1023" || ranges[1] != "bytes=1024-2047" {
		t.Errorf("CDN ranges %v: want the head read from 1 KiB, doubling", ranges)
	}
	for _, r := range ranges {
		if r == "" || strings.HasSuffix(r, "-") {
			t.Errorf("the refused file was fetched (%q)", r)
		}
	}
	if blobs, _ := os.ReadDir(filepath.Join(c.Cache.repoDir("org/mamba-GGUF"), "blobs")); len(blobs) != 0 {
		t.Errorf("blobs/ holds %v after a refusal", blobs)
	}
	// a tensor type the engine does not run is refused naming those it does
	hub.Add("org/q2-GGUF", map[string][]byte{"q2-Q8_0.gguf": withType(t, good, 10)})
	if _, err := pull(t, c, "org/q2-GGUF"); !errors.As(err, &ue) || !strings.Contains(err.Error(), `tensor "token_embd.weight" has unsupported type 10 (the engine runs the tensor types F32, F16, Q4_0`) {
		t.Errorf("a Q2_K tensor: %v", err)
	}
	// a header longer than the bound is refused as such
	c.HeadBytes, c.MaxHeadBytes = 1<<10, 4<<10
	if _, err := pull(t, c, "org/tiny-GGUF"); !errors.As(err, &ue) || !strings.Contains(err.Error(), "header goes on past its first 4.0 KiB") {
		t.Errorf("a header over MaxHeadBytes: %v", err)
	}
	c.MaxHeadBytes = 0
	if _, err := pull(t, c, "org/tiny-GGUF"); err != nil {
		t.Errorf("a file the engine runs, its head read from 1 KiB: %v", err)
	}
}

// A full disk stops the download with its own error (the part fetched is
// kept for later): /dev/full stands in for the partial file.
func TestPullDiskFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	hub, c := newHub(t)
	data := ggufModel(t, 1)
	hub.Add("org/tiny-GGUF", map[string][]byte{"tiny-Q8_0.gguf": data})
	part := c.Cache.blob("org/tiny-GGUF", sha(data)) + ".incomplete"
	os.MkdirAll(filepath.Dir(part), 0o755)
	if err := os.Symlink("/dev/full", part); err != nil {
		t.Fatal(err)
	}
	_, err := pull(t, c, "org/tiny-GGUF")
	var df *DiskFullError
	if !errors.As(err, &df) || !strings.Contains(err.Error(), "disk full writing") || !strings.Contains(err.Error(), "free space and pull again") {
		t.Errorf("err = %v, want a disk-full error", err)
	}
}

// A pull stopped (Ctrl-C) keeps what it fetched and says so; the next
// one continues from there.
func TestPullStoppedKeepsThePart(t *testing.T) {
	hub, c := newHub(t)
	data := ggufModel(t, 1)
	hub.Add("org/tiny-GGUF", map[string][]byte{"tiny-Q8_0.gguf": data})
	hub.Stall(1, 50_000)
	ctx, cancel := context.WithCancel(context.Background())
	var once bool
	opt := Options{Progress: func(done, total int64) {
		if done >= 50_000 && !once {
			once = true
			cancel()
		}
	}}
	ref, _ := ParseRef("org/tiny-GGUF")
	_, err := c.Pull(ctx, Request{Ref: ref}, opt)
	if err == nil || !strings.Contains(err.Error(), "stopped after 48.8 KiB") || !strings.Contains(err.Error(), "pull again to continue") {
		t.Fatalf("a stopped pull: %v", err)
	}
	res, err := pull(t, c, "org/tiny-GGUF")
	if err != nil || res.Resumed != 50_000 {
		t.Fatalf("the next pull: %+v, %v; want it to continue from 50,000 bytes", res, err)
	}
	if got, _ := os.ReadFile(res.Path); !bytes.Equal(got, data) {
		t.Fatalf("the pulled file differs from the Hub's")
	}
}

// A Hub that cannot be reached: each failed try is told (pull prints it)
// before the next, and the last error says where it looked and how to
// work from the cache alone.
func TestPullUnreachableSaysWhereItLooked(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	var told []time.Duration
	c := &Client{Endpoint: endpoint, Cache: Cache{Dir: t.TempDir()}, Retries: 2, Backoff: time.Millisecond,
		OnRetry: func(_ error, wait time.Duration) { told = append(told, wait) }}
	_, err = c.Pull(context.Background(), Request{Ref: Ref{Repo: "org/tiny-GGUF"}}, Options{})
	if err == nil {
		t.Fatal("a pull from a closed port succeeded")
	}
	for _, want := range []string{endpoint, "HF_ENDPOINT", "HF_HUB_OFFLINE=1", "gave up after 3 tries"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	if diff := cmp.Diff([]time.Duration{time.Millisecond, 2 * time.Millisecond}, told); diff != "" {
		t.Errorf("the retries told (-want +got):\n%s", diff)
	}
}

package hfhub

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The cache and the token are found where huggingface_hub looks.
func TestCacheDirAndToken(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, tc := range []struct {
		name                  string
		hubCache, hfHome, xdg string
		want                  string
	}{
		{"default", "", "", "", filepath.Join(home, ".cache", "huggingface", "hub")},
		{"XDG_CACHE_HOME", "", "", "/xdg", "/xdg/huggingface/hub"},
		{"HF_HOME", "", "/hf", "/xdg", "/hf/hub"},
		{"HF_HUB_CACHE", "/hub", "/hf", "/xdg", "/hub"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HF_HUB_CACHE", tc.hubCache)
			t.Setenv("HF_HOME", tc.hfHome)
			t.Setenv("XDG_CACHE_HOME", tc.xdg)
			if got, err := CacheDir(); err != nil || got != tc.want {
				t.Errorf("CacheDir() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	hf := filepath.Join(home, "hf")
	os.MkdirAll(hf, 0o755)
	os.WriteFile(filepath.Join(hf, "token"), []byte("hf_fromfile\n"), 0o600)
	t.Setenv("HF_HOME", hf)
	t.Setenv("HF_ENDPOINT", "http://mirror.test/")
	t.Setenv("HF_HUB_OFFLINE", "1")
	for _, tc := range []struct{ env, want string }{{"hf_fromenv", "hf_fromenv"}, {"", "hf_fromfile"}} {
		t.Setenv("HF_TOKEN", tc.env)
		c, err := FromEnv()
		if err != nil || c.Token != tc.want || c.Endpoint != "http://mirror.test" || !c.Offline || c.Cache.Dir != filepath.Join(hf, "hub") {
			t.Errorf("FromEnv() with HF_TOKEN=%q: %+v, %v", tc.env, c, err)
		}
	}
}

// put stores a file in a cache as a pull would.
func put(t *testing.T, c Cache, repo, commit, file string, data []byte) {
	t.Helper()
	blob := c.blob(repo, sha(data))
	os.MkdirAll(filepath.Dir(blob), 0o755)
	if err := os.WriteFile(blob, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.link(repo, commit, file, sha(data)); err != nil {
		t.Fatal(err)
	}
	if err := c.setRef(repo, commit); err != nil {
		t.Fatal(err)
	}
}

// Models offers each repository's GGUF models at refs/main as ORG/REPO:TAG,
// or ORG/REPO/FILE when the tag is missing or shared; split parts,
// projectors, other files, missing blobs, other snapshots and folders
// without refs/main are left out.
func TestCacheModels(t *testing.T) {
	c := Cache{t.TempDir()}
	a, b := "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	put(t, c, "org/old", b, "old-Q8_0.gguf", []byte("old"))
	put(t, c, "org/one-GGUF", a, "one-Q4_K_M.gguf", []byte("q4"))
	put(t, c, "org/one-GGUF", a, "one-q8_0.gguf", []byte("q8"))
	put(t, c, "org/one-GGUF", a, "mmproj-one-F16.gguf", []byte("mm"))
	put(t, c, "org/one-GGUF", a, "big-F16-00001-of-00002.gguf", []byte("s1"))
	put(t, c, "org/one-GGUF", a, "README.md", []byte("r"))
	put(t, c, "org/one-GGUF", a, "sub/model.gguf", []byte("plain"))
	put(t, c, "org/one-GGUF", b, "one-F16.gguf", []byte("other snapshot"))
	c.setRef("org/one-GGUF", a)
	put(t, c, "org/two-GGUF", a, "7b-Q8_0.gguf", []byte("7"))
	put(t, c, "org/two-GGUF", a, "1b-Q8_0.gguf", []byte("1"))
	put(t, c, "org/two-GGUF", a, "gone-Q4_0.gguf", []byte("gone"))
	os.Remove(c.blob("org/two-GGUF", sha([]byte("gone"))))
	os.Remove(c.ref("org/old"))
	os.MkdirAll(filepath.Join(c.Dir, "datasets--org--data"), 0o755)
	got, err := c.Models()
	if err != nil {
		t.Fatal(err)
	}
	snap := func(repo, file string) string { return c.snapshot(repo, a, file) }
	want := []Model{
		{"org/one-GGUF/sub/model.gguf", "org/one-GGUF", "sub/model.gguf", snap("org/one-GGUF", "sub/model.gguf")},
		{"org/one-GGUF:Q4_K_M", "org/one-GGUF", "one-Q4_K_M.gguf", snap("org/one-GGUF", "one-Q4_K_M.gguf")},
		{"org/one-GGUF:Q8_0", "org/one-GGUF", "one-q8_0.gguf", snap("org/one-GGUF", "one-q8_0.gguf")},
		{"org/two-GGUF/1b-Q8_0.gguf", "org/two-GGUF", "1b-Q8_0.gguf", snap("org/two-GGUF", "1b-Q8_0.gguf")},
		{"org/two-GGUF/7b-Q8_0.gguf", "org/two-GGUF", "7b-Q8_0.gguf", snap("org/two-GGUF", "7b-Q8_0.gguf")},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Models (-want +got):\n%s", d)
	}
	if m, err := (Cache{filepath.Join(c.Dir, "missing")}).Models(); err != nil || m != nil {
		t.Errorf("a missing cache: %v, %v", m, err)
	}
}

// Remove deletes a model's link and its blob, but keeps a blob another
// snapshot still links to (the same bytes at an older commit).
func TestCacheRemove(t *testing.T) {
	c := Cache{t.TempDir()}
	a, b := "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	put(t, c, "org/m-GGUF", b, "m-Q8_0.gguf", []byte("shared"))
	put(t, c, "org/m-GGUF", a, "m-Q8_0.gguf", []byte("shared"))
	put(t, c, "org/m-GGUF", a, "m-Q4_0.gguf", []byte("alone"))
	ms, err := c.Models()
	if err != nil || len(ms) != 2 {
		t.Fatalf("Models: %v, %v", ms, err)
	}
	for _, m := range ms {
		if err := c.Remove(m); err != nil {
			t.Fatalf("Remove(%s): %v", m.Name, err)
		}
	}
	if _, err := os.Stat(c.blob("org/m-GGUF", sha([]byte("alone")))); !os.IsNotExist(err) {
		t.Errorf("the blob no other link names is left: %v", err)
	}
	if _, err := os.Stat(c.blob("org/m-GGUF", sha([]byte("shared")))); err != nil {
		t.Errorf("the blob commit %s still links to was deleted: %v", b[:7], err)
	}
	if ms, _ := c.Models(); len(ms) != 0 {
		t.Errorf("after Remove, Models lists %v", ms)
	}
	if err := c.Remove(Model{Name: "x", Repo: "org/m-GGUF", File: "../../etc/passwd"}); err == nil {
		t.Errorf("Remove took a file name that leaves the snapshot")
	}
}

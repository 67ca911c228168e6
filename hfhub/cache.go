package hfhub

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Cache is a Hugging Face cache folder, laid out as huggingface_hub and
// llama.cpp lay it out, so a model any of them fetched is found by the
// others:
//
//	models--ORG--REPO/blobs/SHA256                   a file's bytes, named by their hash
//	models--ORG--REPO/blobs/SHA256.incomplete        a download under way (continued later)
//	models--ORG--REPO/snapshots/COMMIT/FILE          a relative symlink to ../../blobs/SHA256
//	models--ORG--REPO/refs/main                      the commit main pointed to when last seen
type Cache struct{ Dir string }

// CacheDir is where the cache is: $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub, as
// huggingface_hub reads them.
func CacheDir() (string, error) {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d, nil
	}
	home, err := hfHome()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "hub"), nil
}

// hfHome is $HF_HOME, else $XDG_CACHE_HOME/huggingface, else
// ~/.cache/huggingface.
func hfHome() (string, error) {
	if d := os.Getenv("HF_HOME"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "huggingface"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("the Hugging Face cache: no HF_HUB_CACHE or HF_HOME, and %w", err)
	}
	return filepath.Join(home, ".cache", "huggingface"), nil
}

// repoDir is a repository's folder: models--ORG--REPO.
func (c Cache) repoDir(repo string) string {
	return filepath.Join(c.Dir, "models--"+strings.ReplaceAll(repo, "/", "--"))
}

func (c Cache) blob(repo, sha string) string { return filepath.Join(c.repoDir(repo), "blobs", sha) }
func (c Cache) ref(repo string) string       { return filepath.Join(c.repoDir(repo), "refs", "main") }

// snapshot is a file's path in a commit's snapshot (file is checked by
// checkFileName first).
func (c Cache) snapshot(repo, commit, file string) string {
	return filepath.Join(c.repoDir(repo), "snapshots", commit, filepath.FromSlash(file))
}

// checkFileName refuses a repository file name that would leave its
// snapshot folder or is not portable: the name comes from the server.
func checkFileName(name string) error {
	if name == "" || len(name) > 1024 || strings.ContainsAny(name, "\\\x00:") || path.IsAbs(name) || path.Clean(name) != name || name == "." || strings.HasPrefix(name, "../") || name == ".." {
		return fmt.Errorf("file name %.120q cannot be stored in the cache", name)
	}
	return nil
}

// checkCommit accepts a commit id as the Hub writes one: 40 hex digits.
func checkCommit(c string) error {
	if !isHex(c, 40) {
		return fmt.Errorf("commit %.60q is not 40 hex digits", c)
	}
	return nil
}

// isHex reports whether s is n lowercase hex digits.
func isHex(s string, n int) bool {
	return len(s) == n && strings.IndexFunc(s, func(r rune) bool { return !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') }) < 0
}

// Commit is the commit refs/main names, read without a request.
func (c Cache) Commit(repo string) (string, error) {
	b, err := os.ReadFile(c.ref(repo))
	if err != nil {
		return "", fmt.Errorf("%s is not in the cache %s: %w", repo, c.Dir, err)
	}
	commit := string(bytes.TrimSpace(b))
	if err := checkCommit(commit); err != nil {
		return "", fmt.Errorf("%s: %w", c.ref(repo), err)
	}
	return commit, nil
}

// Files lists the complete files of a commit's snapshot (a link whose
// blob is missing is left out), with their sizes.
func (c Cache) Files(repo, commit string) ([]File, error) {
	root := filepath.Join(c.repoDir(repo), "snapshots", commit)
	var files []File
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		st, err := os.Stat(p) // follows the link to its blob
		if err != nil || !st.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files = append(files, File{Name: filepath.ToSlash(rel), Size: st.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s at %s in the cache: %w", repo, commit, err)
	}
	return files, nil
}

// link points a snapshot's file at its blob with a relative symlink, as
// huggingface_hub does (the cache may be moved), replacing what was there.
func (c Cache) link(repo, commit, file, sha string) error {
	dst := c.snapshot(repo, commit, file)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("the cache's snapshot of %s: %w", repo, err)
	}
	rel, err := filepath.Rel(filepath.Dir(dst), c.blob(repo, sha))
	if err != nil {
		return fmt.Errorf("linking %s: %w", dst, err)
	}
	tmp := dst + ".link"
	os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return fmt.Errorf("linking %s: %w", dst, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("linking %s: %w", dst, err)
	}
	return nil
}

// setRef records the commit main points to (written whole, then renamed).
func (c Cache) setRef(repo, commit string) error {
	p := c.ref(repo)
	if old, err := os.ReadFile(p); err == nil && string(old) == commit {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("the cache's refs of %s: %w", repo, err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(commit), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}

// Model is a GGUF model in the cache, as serve offers it.
type Model struct {
	Name string // ORG/REPO:QUANT, or ORG/REPO/FILE when its tag is missing or shared
	Repo string
	File string // its path in the repository
	Path string // its path in the snapshot refs/main names
}

// Models lists every GGUF model in the cache that IsGGUF would take: the
// files of each repository's snapshot that refs/main names. A missing
// cache folder has none; a repository folder without refs/main, or a
// broken one, is skipped.
func (c Cache) Models() ([]Model, error) {
	dirs, err := os.ReadDir(c.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the Hugging Face cache: %w", err)
	}
	var out []Model
	for _, d := range dirs {
		name, ok := strings.CutPrefix(d.Name(), "models--")
		repo := strings.Replace(name, "--", "/", 1)
		if !ok || !d.IsDir() || checkRepo(repo) != nil {
			continue
		}
		commit, err := c.Commit(repo)
		if err != nil {
			continue
		}
		files, err := c.Files(repo, commit)
		if err != nil {
			continue
		}
		out = append(out, repoModels(c, repo, commit, files)...)
	}
	return out, nil
}

// repoModels names a snapshot's GGUF models: ORG/REPO:TAG (upper case)
// when no other file of the snapshot has that tag, else ORG/REPO/FILE.
func repoModels(c Cache, repo, commit string, files []File) []Model {
	tags := map[string]int{}
	for _, f := range files {
		if IsGGUF(f.Name) {
			tags[strings.ToUpper(Tag(f.Name))]++
		}
	}
	var out []Model
	for _, f := range files {
		if !IsGGUF(f.Name) {
			continue
		}
		m := Model{Name: repo + "/" + f.Name, Repo: repo, File: f.Name, Path: c.snapshot(repo, commit, f.Name)}
		if t := strings.ToUpper(Tag(f.Name)); t != "" && tags[t] == 1 {
			m.Name = repo + ":" + t
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Model) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Remove deletes a model from the cache: its file's link in the snapshot
// refs/main names, then the blob it pointed to unless another snapshot's
// link still points there (huggingface_hub shares blobs between
// commits). A partial download of that blob is left: the next pull
// continues it.
func (c Cache) Remove(m Model) error {
	if err := checkRepo(m.Repo); err != nil {
		return fmt.Errorf("removing %s: %w", m.Name, err)
	}
	if err := checkFileName(m.File); err != nil {
		return fmt.Errorf("removing %s: %w", m.Name, err)
	}
	commit, err := c.Commit(m.Repo)
	if err != nil {
		return fmt.Errorf("removing %s: %w", m.Name, err)
	}
	link := c.snapshot(m.Repo, commit, m.File)
	target, err := os.Readlink(link)
	if err != nil {
		return fmt.Errorf("removing %s: %w", m.Name, err)
	}
	blob := target
	if !filepath.IsAbs(blob) {
		blob = filepath.Join(filepath.Dir(link), blob)
	}
	if err := os.Remove(link); err != nil {
		return fmt.Errorf("removing %s: %w", m.Name, err)
	}
	blobs := filepath.Join(c.repoDir(m.Repo), "blobs")
	if filepath.Dir(filepath.Clean(blob)) != blobs {
		return nil // a link into somewhere else: not ours to delete
	}
	shared := false
	filepath.WalkDir(filepath.Join(c.repoDir(m.Repo), "snapshots"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if t, err := os.Readlink(p); err == nil {
			if !filepath.IsAbs(t) {
				t = filepath.Join(filepath.Dir(p), t)
			}
			shared = shared || filepath.Clean(t) == filepath.Clean(blob)
		}
		return nil
	})
	if shared {
		return nil
	}
	if err := os.Remove(blob); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s's blob: %w", m.Name, err)
	}
	return nil
}

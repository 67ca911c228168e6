package hfhub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
)

// Request is what to pull: a repository with an optional quantization
// tag, or one of its files by name.
type Request struct {
	Ref
	File string // the file's path in the repository; set, Ref.Quant must be empty
}

// Options are a pull's hooks and facts about the machine.
type Options struct {
	// Progress is called as bytes arrive (done counts those fetched
	// earlier too); nil: not interested.
	Progress func(done, total int64)
	// Memory is the machine's memory in bytes for Choose's default
	// (0: unknown, nothing is ruled out for its size).
	Memory uint64
}

// Result is a pulled model.
type Result struct {
	Repo, File, Commit string
	Path               string // the file in the cache's snapshot
	Size               int64
	Why                string // why this file was taken
	Name               string // the name serve offers it by
	Fetched, Resumed   int64  // bytes fetched now, and by an attempt before (0 and 0: it was in the cache)
}

// repoInfo is the part of GET /api/models/REPO/revision/main?blobs=true
// that a pull reads.
type repoInfo struct {
	SHA      string `json:"sha"`
	Siblings []struct {
		Name string `json:"rfilename"`
		Size int64  `json:"size"`
		LFS  *struct {
			Size int64 `json:"size"`
		} `json:"lfs"`
	} `json:"siblings"`
}

// Pull fetches a GGUF model into the cache, or finds it there: the
// repository's files are listed (the commit main points to, their sizes),
// one is chosen (the named file, or Choose's pick), and unless its
// snapshot already holds it, its header is checked from a bounded head
// and its bytes fetched into its blob (continuing a partial one),
// checked against its sha256, linked from the snapshot, and refs/main
// set. Offline, it is found in the cache without a request.
func (c *Client) Pull(ctx context.Context, req Request, opt Options) (*Result, error) {
	if req.File != "" && req.Quant != "" {
		return nil, fmt.Errorf("%s: name a file or a quantization, not both", req.Repo)
	}
	if req.File != "" {
		if err := checkFileName(req.File); err != nil {
			return nil, err
		}
	}
	if c.Offline {
		return c.pullOffline(req, opt)
	}
	if _, err := c.client(); err != nil {
		return nil, err
	}
	commit, files, err := c.list(ctx, req.Repo)
	if err != nil {
		return nil, err
	}
	pick, err := choose(req, files, opt.Memory)
	if err != nil {
		return nil, err
	}
	res := &Result{Repo: req.Repo, File: pick.File.Name, Commit: commit, Size: pick.File.Size, Why: pick.Why,
		Path: c.Cache.snapshot(req.Repo, commit, pick.File.Name)}
	if st, err := os.Stat(res.Path); err == nil && st.Mode().IsRegular() && (res.Size == 0 || st.Size() == res.Size) {
		res.Size = st.Size()
		return c.done(res)
	}
	r, err := c.stat(ctx, req.Repo, commit, pick.File.Name)
	if err != nil {
		return nil, err
	}
	res.Size = r.Size
	if st, err := os.Stat(c.Cache.blob(req.Repo, r.SHA256)); err != nil || st.Size() != r.Size {
		if err := c.checkHeader(ctx, r); err != nil {
			return nil, err
		}
		if res.Fetched, res.Resumed, err = c.fetch(ctx, req.Repo, r, opt.Progress); err != nil {
			return nil, err
		}
	}
	if err := c.Cache.link(req.Repo, commit, r.File, r.SHA256); err != nil {
		return nil, err
	}
	return c.done(res)
}

// list asks for a repository's files at the commit main points to.
func (c *Client) list(ctx context.Context, repo string) (string, []File, error) {
	var info repoInfo
	if err := c.getJSON(ctx, "list the files of "+repo, repo, "/api/models/"+repo+"/revision/main?blobs=true", &info); err != nil {
		if errors.Is(err, ErrNotFound) {
			hint := ""
			if c.Token == "" {
				hint = " (or it is private: set HF_TOKEN)"
			}
			return "", nil, fmt.Errorf("%w: no repository %s on %s%s", err, repo, c.Endpoint, hint)
		}
		return "", nil, err
	}
	if err := checkCommit(info.SHA); err != nil {
		return "", nil, fmt.Errorf("the files of %s: %w", repo, err)
	}
	var files []File
	for _, s := range info.Siblings {
		if checkFileName(s.Name) != nil {
			continue // a name no cache could hold is never chosen
		}
		f := File{Name: s.Name, Size: s.Size}
		if s.LFS != nil && s.LFS.Size > 0 {
			f.Size = s.LFS.Size
		}
		files = append(files, f)
	}
	return info.SHA, files, nil
}

// choose is Choose, or the named file.
func choose(req Request, files []File, memory uint64) (Choice, error) {
	if req.File == "" {
		c, err := Choose(files, req.Quant, memory)
		if err != nil {
			return Choice{}, fmt.Errorf("%s: %w", req.Repo, err)
		}
		return c, nil
	}
	for _, f := range files {
		if f.Name != req.File {
			continue
		}
		switch {
		case IsSplit(f.Name):
			return Choice{}, fmt.Errorf("%s: %s is one part of a split GGUF: stepthrough loads single-file GGUF models", req.Repo, f.Name)
		case !strings.EqualFold(path.Ext(f.Name), ".gguf"):
			return Choice{}, fmt.Errorf("%s: %s is not a GGUF file", req.Repo, f.Name)
		}
		return Choice{f, "named with --file"}, nil
	}
	return Choice{}, fmt.Errorf("%s: %w: no file %s here (%s)", req.Repo, ErrNoMatch, req.File, available(files))
}

// pullOffline finds the model in the cache: refs/main's snapshot, chosen
// among the files it holds.
func (c *Client) pullOffline(req Request, opt Options) (*Result, error) {
	commit, err := c.Cache.Commit(req.Repo)
	if err != nil {
		return nil, fmt.Errorf("HF_HUB_OFFLINE is set: %w", err)
	}
	files, err := c.Cache.Files(req.Repo, commit)
	if err != nil {
		return nil, fmt.Errorf("HF_HUB_OFFLINE is set: %w", err)
	}
	pick, err := choose(req, files, opt.Memory)
	if err != nil {
		return nil, fmt.Errorf("HF_HUB_OFFLINE is set, and in the cache %w", err)
	}
	res := &Result{Repo: req.Repo, File: pick.File.Name, Commit: commit, Size: pick.File.Size, Why: pick.Why,
		Path: c.Cache.snapshot(req.Repo, commit, pick.File.Name)}
	return c.name(res)
}

// done records the commit main points to and names the result.
func (c *Client) done(res *Result) (*Result, error) {
	if err := c.Cache.setRef(res.Repo, res.Commit); err != nil {
		return nil, err
	}
	return c.name(res)
}

// name finds the name serve offers the result by.
func (c *Client) name(res *Result) (*Result, error) {
	files, err := c.Cache.Files(res.Repo, res.Commit)
	if err != nil {
		return nil, err
	}
	for _, m := range repoModels(c.Cache, res.Repo, res.Commit, files) {
		if m.File == res.File {
			res.Name = m.Name
		}
	}
	return res, nil
}

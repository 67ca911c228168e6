package hfhub

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
)

func bufioScanner(s string) *bufio.Scanner { return bufio.NewScanner(strings.NewReader(s)) }

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Ref
		wantErr string
	}{
		{"unsloth/Qwen3-0.6B-GGUF", Ref{"unsloth/Qwen3-0.6B-GGUF", ""}, ""},
		{"unsloth/Qwen3-0.6B-GGUF:Q4_K_M", Ref{"unsloth/Qwen3-0.6B-GGUF", "Q4_K_M"}, ""},
		{"hf.co/bartowski/SmolLM2-135M-Instruct-GGUF:q8_0", Ref{"bartowski/SmolLM2-135M-Instruct-GGUF", "q8_0"}, ""},
		{"https://huggingface.co/org/repo_1.x:UD-Q4_K_XL", Ref{"org/repo_1.x", "UD-Q4_K_XL"}, ""},
		{"hf.co/org/repo", Ref{"org/repo", ""}, ""},
		{"hf.co/repo", Ref{"hf.co/repo", ""}, ""}, // an owner named hf.co: nothing to drop
		{"gpt2", Ref{}, "ORG/REPO (one '/')"},
		{"a/b/c", Ref{}, "ORG/REPO (one '/')"},
		{"org/", Ref{}, "1 to 96 characters"},
		{"org/" + strings.Repeat("x", 97), Ref{}, "1 to 96 characters"},
		{"org/re--po", Ref{}, `no "--" or ".."`},
		{"org/../x", Ref{}, "ORG/REPO (one '/')"},
		{"org/..x", Ref{}, `no "--" or ".."`},
		{"org/-repo", Ref{}, "neither starts nor ends"},
		{"org/repo.", Ref{}, "neither starts nor ends"},
		{"org/re po", Ref{}, "letters, digits"},
		{"org/repo.git", Ref{}, "without .git"},
		{"org/repo:", Ref{}, "1 to 64 characters"},
		{"org/repo:Q8/0", Ref{}, "letters, digits"},
		{"org/repo:a:b", Ref{}, "letters, digits"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRef(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), strconv.Quote(tc.in)) {
					t.Errorf("ParseRef(%q) = %v, %v; want an error naming it and saying %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseRef(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		})
	}
}

// FuzzParseRef: any argument parses or fails without a panic; what parses
// is a repository whose cache folder stays inside the cache, written back
// as it reads.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"org/repo", "org/repo:Q4_K_M", "hf.co/a/b:c", "a/b/c", "org/re--po", "../x", "org/repo:a:b", "o/r:" + strings.Repeat("x", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		dir := Cache{"/cache"}.repoDir(r.Repo)
		if !strings.HasPrefix(dir, "/cache/models--") || strings.Count(dir, "/") != 2 || strings.Contains(r.Repo, "..") {
			t.Fatalf("ParseRef(%q) = %+v: its cache folder is %s", s, r, dir)
		}
		if back, err := ParseRef(r.String()); err != nil || back != r {
			t.Fatalf("ParseRef(%q).String() = %q reads back as %+v, %v", s, r.String(), back, err)
		}
	})
}

package engine

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// cited is anything in backquotes, as the documents cite files,
	// folders and commands.
	cited = regexp.MustCompile("`([^`\n]+)`")
	// docFile is a file name, with or without its folder.
	docFile = regexp.MustCompile(`^[A-Za-z0-9_./*-]+\.(?:go|md|templ|sh|js|css|comp|glsl|yml|yaml|s|tmpl|tsv|json)$`)
	// repoPath is a path of the repository's own: no spaces, no scheme,
	// no braces or placeholders.
	repoPath = regexp.MustCompile(`^[A-Za-z0-9_.*-]+(?:/[A-Za-z0-9_.*-]+)+/?$`)
	// link is a Markdown link's target, without its #fragment.
	link = regexp.MustCompile(`\]\(([^)#\s]+)(?:#[^)]*)?\)`)
	// tableRow is a row of docs/ARCHITECTURE.md's package table: the
	// package's folder, whose own files the row cites by name.
	tableRow = regexp.MustCompile("^\\| `([a-z0-9/.]+)` \\|")
)

// The documents cite only files and folders that exist: a path from the
// repository's root whose first folder is one of the repository's (a
// package, docs/, tools/ …), or a bare file name, which in a row of the
// package table must be in that package's folder and elsewhere in some
// folder; and their links lead to files that exist, from the document's
// own folder. A file moved or renamed fails here until the documents
// follow it.
func TestArchitectureCitesRealFiles(t *testing.T) {
	root := filepath.Join("..")
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "BENCHMARKS.md"))
	names, tops := repoNames(t, root)
	outputs := ignoredFolders(t, root)
	if !tops["engine"] || !tops["docs"] {
		t.Fatalf("the repository's folders were not found from %s: %v", root, tops)
	}
	for _, doc := range docs {
		if filepath.Base(doc) == "perf-log.md" {
			continue // a dated journal: it names the files as they were then
		}
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		for i, line := range strings.Split(string(b), "\n") {
			dir := ""
			if m := tableRow.FindStringSubmatch(line); m != nil && filepath.Base(doc) == "ARCHITECTURE.md" {
				dir = m[1]
			}
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				if strings.Contains(m[1], "://") || strings.HasPrefix(m[1], "mailto:") {
					continue
				}
				if _, err := os.Stat(filepath.Join(filepath.Dir(doc), filepath.FromSlash(m[1]))); err != nil {
					t.Errorf("%s:%d links to %s, which does not exist", rel, i+1, m[1])
				}
			}
			for _, m := range cited.FindAllStringSubmatch(line, -1) {
				if outputs.MatchString(m[1]) {
					continue // written by a build or a run, not committed
				}
				if why := missing(root, m[1], dir, names, tops); why != "" {
					t.Errorf("%s:%d cites %s, %s", rel, i+1, m[1], why)
				}
			}
		}
	}
}

// missing says why a cited text names nothing in the repository, or ""
// when it does or is not a file's or folder's name at all.
func missing(root, c, dir string, names, tops map[string]bool) string {
	switch {
	case repoPath.MatchString(c) && tops[strings.SplitN(c, "/", 2)[0]]:
		if m, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(c))); err != nil || len(m) == 0 {
			return "which does not exist"
		}
	case !strings.Contains(c, "/") && docFile.MatchString(c) && dir != "":
		if m, err := filepath.Glob(filepath.Join(root, dir, c)); err != nil || len(m) == 0 {
			return "which its package's folder " + dir + " does not hold"
		}
	case !strings.Contains(c, "/") && docFile.MatchString(c):
		if !names[c] {
			return "which no folder holds"
		}
	}
	return ""
}

// repoNames walks the repository: the names of its files and folders,
// and its top-level folders that hold source or documents (not a folder
// the app writes at run time, such as data/).
func repoNames(t *testing.T, root string) (names, tops map[string]bool) {
	t.Helper()
	names, tops = map[string]bool{}, map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		names[d.Name()] = true
		rel, _ := filepath.Rel(root, p)
		top, _, nested := strings.Cut(filepath.ToSlash(rel), "/")
		if nested && !d.IsDir() && docFile.MatchString(d.Name()) {
			tops[top] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names, tops
}

// ignoredFolders matches a path inside a folder that .gitignore names
// from the root (/bin/, /data/ …): what builds and runs write.
func ignoredFolders(t *testing.T, root string) *regexp.Regexp {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	alts := []string{"$^"} // matches nothing when there are none
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "/") && strings.HasSuffix(l, "/") {
			alts = append(alts, regexp.QuoteMeta(strings.Trim(l, "/")))
		}
	}
	return regexp.MustCompile(`^(?:` + strings.Join(alts, "|") + `)(?:/|$)`)
}

package engine

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docFile is a file name in backquotes, as docs/ARCHITECTURE.md cites one.
var docFile = regexp.MustCompile("`([A-Za-z0-9_./-]+\\.(?:go|md|templ|sh|js|css|comp|glsl|yml|yaml))`")

// docs/ARCHITECTURE.md cites only files that exist: a path from the
// repository's root, or a bare name that some package holds (a row's own
// files are cited by name). A file moved or renamed fails here until the
// document follows it.
func TestArchitectureCitesRealFiles(t *testing.T) {
	root := filepath.Join("..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		names[d.Name()] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(doc), "\n") {
		for _, m := range docFile.FindAllStringSubmatch(line, -1) {
			cited := m[1]
			if strings.Contains(cited, "/") {
				if _, err := os.Stat(filepath.Join(root, cited)); err != nil {
					t.Errorf("docs/ARCHITECTURE.md:%d cites %s, which does not exist", i+1, cited)
				}
			} else if !names[cited] {
				t.Errorf("docs/ARCHITECTURE.md:%d cites %s, which no directory holds", i+1, cited)
			}
		}
	}
}

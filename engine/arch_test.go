package engine

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// goPackages maps each package directory under root to its parsed files'
// imports and whether any file carries a package doc comment.
func goPackages(t *testing.T, root string) map[string]struct {
	imports []string
	doc     bool
} {
	t.Helper()
	pkgs := map[string]struct {
		imports []string
		doc     bool
	}{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		p := pkgs[dir]
		for _, imp := range f.Imports {
			s, _ := strconv.Unquote(imp.Path.Value)
			p.imports = append(p.imports, s)
		}
		if !strings.HasSuffix(path, "_test.go") && f.Doc != nil {
			p.doc = true
		}
		pkgs[dir] = p
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// The engine knows nothing of the web: no package under engine/ imports
// server/ or views/.
func TestEngineDoesNotImportWeb(t *testing.T) {
	for dir, p := range goPackages(t, ".") {
		for _, imp := range p.imports {
			if imp == "stepthrough/server" || imp == "stepthrough/views" ||
				strings.HasPrefix(imp, "stepthrough/server/") || strings.HasPrefix(imp, "stepthrough/views/") {
				t.Errorf("%s imports %s: engine/ must not depend on the web packages", dir, imp)
			}
		}
	}
}

// Every package in the repository has a package doc comment.
func TestEveryPackageHasDoc(t *testing.T) {
	for dir, p := range goPackages(t, "..") {
		if !p.doc {
			t.Errorf("package in %s has no package doc comment", dir)
		}
	}
}

package engine

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pkgInfo is what the architecture tests know of a package directory:
// its imports (all files, tests included unless noted) and how many of
// its non-test files carry a package doc comment.
type pkgInfo struct {
	imports     []string // every file's
	codeImports []string // non-test files'
	docs        int
}

// goPackages maps each package directory under root to its pkgInfo.
func goPackages(t *testing.T, root string) map[string]pkgInfo {
	t.Helper()
	pkgs := map[string]pkgInfo{}
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
		test := strings.HasSuffix(path, "_test.go")
		for _, imp := range f.Imports {
			s, _ := strconv.Unquote(imp.Path.Value)
			p.imports = append(p.imports, s)
			if !test {
				p.codeImports = append(p.codeImports, s)
			}
		}
		if !test && f.Doc != nil && strings.HasPrefix(strings.TrimSpace(f.Doc.Text()), "Package ") || !test && f.Doc != nil && f.Name.Name == "main" {
			p.docs++
		}
		pkgs[dir] = p
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// imports reports whether any of list is pkg or inside it.
func imports(list []string, pkg string) bool {
	for _, imp := range list {
		if imp == pkg || strings.HasPrefix(imp, pkg+"/") {
			return true
		}
	}
	return false
}

// The layers of the house: docs/ARCHITECTURE.md's table says, for every
// package, what it holds and which project packages it may import (its
// non-test files). The table is the allow-list, and exact: a package
// importing anything else fails, so does a row naming an import the
// package no longer makes (the table stays true), a package missing from
// it (a new package states its place) and a row for a package that is
// gone.
func TestLayers(t *testing.T) {
	allowed := mayImport(t)
	all := goPackages(t, "..")
	if len(all) < 10 {
		t.Fatalf("found only %d packages: the walk is wrong", len(all))
	}
	seen := map[string]bool{}
	for dir, p := range all {
		pkg := filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(dir, ".."), string(filepath.Separator)))
		if pkg == "" {
			pkg = "."
		}
		seen[pkg] = true
		may, ok := allowed[pkg]
		if !ok {
			t.Errorf("%s is not in docs/ARCHITECTURE.md's package table: add a row saying what it holds and may import", pkg)
			continue
		}
		bad, used := map[string]bool{}, map[string]bool{}
		for _, imp := range p.codeImports {
			rel, ok := strings.CutPrefix(imp, "stepthrough/")
			if !ok || rel == pkg {
				continue
			}
			used[rel] = true
			if !may[rel] && !bad[rel] {
				bad[rel] = true
				t.Errorf("%s imports %s, which its row in docs/ARCHITECTURE.md does not allow", pkg, rel)
			}
		}
		for rel := range may {
			if !used[rel] {
				t.Errorf("docs/ARCHITECTURE.md says %s may import %s, which it does not: the row is stale", pkg, rel)
			}
		}
	}
	for pkg := range allowed {
		if !seen[pkg] {
			t.Errorf("docs/ARCHITECTURE.md lists %s, which does not exist", pkg)
		}
	}
}

// mayImport reads docs/ARCHITECTURE.md's package table: rows of
// | `pkg` | what it holds | `a`, `b` (or "nothing") |, the last column
// naming project packages by their path in the module.
func mayImport(t *testing.T) map[string]map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		pkg := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if !strings.Contains(cells[3], "`") && strings.TrimSpace(cells[3]) != "nothing" {
			continue // another table
		}
		may := map[string]bool{}
		for i, part := range strings.Split(cells[3], "`") {
			if i%2 == 1 {
				may[part] = true
			}
		}
		rows[pkg] = may
	}
	if len(rows) < 10 {
		t.Fatalf("read %d rows of docs/ARCHITECTURE.md's package table: its format changed", len(rows))
	}
	return rows
}

// Every package in the repository has exactly one package doc comment.
func TestEveryPackageHasOneDoc(t *testing.T) {
	for dir, p := range goPackages(t, "..") {
		if p.docs != 1 {
			t.Errorf("package in %s has %d package doc comments, want 1", dir, p.docs)
		}
	}
}

// Every unlock is deferred, so a panic can never leave a lock held.
func TestEveryUnlockIsDeferred(t *testing.T) {
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			l := strings.TrimSpace(line)
			if (strings.HasSuffix(l, ".Unlock()") || strings.HasSuffix(l, ".RUnlock()")) && !strings.HasPrefix(l, "defer ") {
				t.Errorf("%s:%d: %s is not deferred", path, i+1, l)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

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

// The layers of the house (docs/ARCHITECTURE.md), data flowing one way.
// Each rule: packages under dir must not import any of the others.
func TestLayers(t *testing.T) {
	all := goPackages(t, "..")
	rules := []struct {
		dir    string
		banned []string
		why    string
	}{
		{"engine", []string{"stepthrough/server", "stepthrough/views", "stepthrough/session", "stepthrough/classroom", "stepthrough/wsconn", "stepthrough/lessons", "stepthrough/cli"}, "the engine knows nothing of the web"},
		{"views", []string{"stepthrough"}, "views are components over plain view models: they import nothing from the project"},
		{"lessons", []string{"stepthrough/server", "stepthrough/classroom", "stepthrough/session", "stepthrough/views"}, "lessons are a file format and answers over a trace"},
		{"session", []string{"stepthrough/server", "stepthrough/classroom", "stepthrough/wsconn"}, "a session is below the classroom and the server"},
		{"classroom", []string{"stepthrough/server"}, "the classroom is below the server"},
		{"wsconn", []string{"stepthrough"}, "the connection type knows no page"},
		{"engine/cpu", []string{"stepthrough/engine/trace"}, "kernels report through hooks, not the trace"},
		{"engine/vulkan", []string{"stepthrough/engine/trace"}, "kernels report through hooks, not the trace"},
		{"engine/quant", []string{"stepthrough/engine/trace"}, "kernels report through hooks, not the trace"},
	}
	for _, r := range rules {
		root := filepath.Join("..", r.dir)
		for dir, p := range all {
			if dir != root && !strings.HasPrefix(dir, root+string(filepath.Separator)) {
				continue
			}
			for _, b := range r.banned {
				// views may import its own generated code's runtime; the
				// project root rule bans every stepthrough package
				for _, imp := range p.codeImports {
					if (imp == b || strings.HasPrefix(imp, b+"/")) && !strings.HasPrefix(imp, "stepthrough/"+r.dir) {
						t.Errorf("%s imports %s: %s", dir, imp, r.why)
					}
				}
			}
		}
	}
	if len(all) < 10 {
		t.Fatalf("found only %d packages: the walk is wrong", len(all))
	}
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

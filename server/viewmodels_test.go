package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stillBuiltHere are the views types server itself still fills in (issue
// #66: present builds the pages' view models, server routes, checks,
// runs and renders). The list only shrinks: move a page's model into
// present and delete its names here. A form's echo of what the viewer
// typed, an error page or a page shell counts as the server's own.
//
// What is left is the server's own: APIKeyForm is the key form (the
// address to go back to, and why it asks); Join is how students reach
// this server, read from the request's host, the listen address and the
// machine's network; MyRoom is a room summary from package classroom,
// which present cannot import (classroom imports present).
var stillBuiltHere = []string{"APIKeyForm", "Join", "MyRoom"}

// Server builds no views value but those listed: every other view model
// comes from present.
func TestServerBuildsOnlyListedViewModels(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	built := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			typ := lit.Type
			if a, ok := typ.(*ast.ArrayType); ok {
				typ = a.Elt
			}
			if sel, ok := typ.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "views" {
					built[sel.Sel.Name] = true
					if !slices.Contains(stillBuiltHere, sel.Sel.Name) {
						t.Errorf("%s: server builds views.%s; build it in present", fset.Position(lit.Pos()), sel.Sel.Name)
					}
				}
			}
			return true
		})
	}
	var gone []string
	for _, n := range stillBuiltHere {
		if !built[n] {
			gone = append(gone, n)
		}
	}
	if diff := cmp.Diff([]string(nil), gone); diff != "" {
		t.Errorf("server no longer builds these: delete them from stillBuiltHere (-want +got):\n%s", diff)
	}
}

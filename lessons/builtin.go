package lessons

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed builtin/*.md
var builtinFS embed.FS

// Builtin parses the lessons that ship with Stepthrough, by file name
// without the .md extension.
func Builtin() (map[string]*Lesson, error) {
	out := map[string]*Lesson{}
	entries, err := fs.ReadDir(builtinFS, "builtin")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		b, err := builtinFS.ReadFile("builtin/" + e.Name())
		if err != nil {
			return nil, err
		}
		l, err := Parse("lessons/builtin/"+e.Name(), b)
		if err != nil {
			return nil, err
		}
		out[strings.TrimSuffix(e.Name(), ".md")] = l
	}
	return out, nil
}

// Names lists lesson names in order.
func Names(m map[string]*Lesson) []string {
	var n []string
	for k := range m {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

package lessons

import (
	"embed"
	"fmt"
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

// ExplorerQuery writes the Explorer's URL parameters for step i: prompt,
// model, settings and seed (stage index and token step are resolved by the
// server, which knows the model's stage list).
func (l *Lesson) ExplorerQuery(i int) (map[string]string, error) {
	if i < 0 || i >= len(l.Steps) {
		return nil, fmt.Errorf("%s: no step %d", l.File, i+1)
	}
	s := l.Steps[i]
	q := map[string]string{"prompt": s.Prompt, "model": l.Model}
	for k, v := range s.Settings {
		q[k] = v
	}
	if s.Seed != "" {
		q["seed"] = s.Seed
	}
	return q, nil
}

package recipe

import (
	"embed"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/template"
)

// readmeFS holds the template of models/README.md: the report's figures
// in the prose that explains them.
//
//go:embed readme.md.tmpl
var readmeFS embed.FS

var readmeTmpl = template.Must(template.New("readme.md.tmpl").Funcs(template.FuncMap{
	"pct":           func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	"f3":            func(f float64) string { return fmt.Sprintf("%.3f", f) },
	"passageTokens": func() int { return PassageTokens },
	"mins":          func(s float64) string { return fmt.Sprintf("%.1f min", s/60) },
	"mib":           func(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) },
	"keys": func(m map[string]float64) []string {
		var k []string
		for x := range m {
			k = append(k, x)
		}
		sort.Strings(k)
		return k
	},
	"total": func(m map[string]float64) float64 {
		var t float64
		for _, v := range m {
			t += v
		}
		return t
	},
	"quote": func(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") },
}).ParseFS(readmeFS, "readme.md.tmpl"))

// WriteREADME renders models/README.md from a report.
func WriteREADME(path string, r *Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := readmeTmpl.Execute(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadReport loads a report.json written by Run.
func ReadReport(path string) (*Report, error) { return readJSON[Report](path) }

// Package htmltest reads rendered HTML for golden tests: Outline turns a
// page or a component into its structure and its words, one element a
// line, with every number masked (measured times, probabilities and
// seeds change; what a reader sees and where does not), and Golden
// compares it with a file in testdata, rewritten with -update.
package htmltest

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden outlines in testdata")

// shown are the attributes an outline keeps: what names, labels and
// addresses an element (not its styling numbers).
var shown = []string{"id", "class", "role", "name", "type", "href", "data-testid", "data-stage", "aria-label", "title"}

var (
	ids     = regexp.MustCompile(`\b[0-9a-fA-F]{8,}\b`)
	numbers = regexp.MustCompile(`[-+]?\d+([.,]\d+)*([eE][-+]?\d+)?`)
	spaces  = regexp.MustCompile(`\s+`)
	// the CPU kernels' level differs from machine to machine
	levels = regexp.MustCompile(`kernels (avx512\+vnni|avx512|avx2|neon\+dotprod|neon|generic)( \(capped by [A-Z_]+\))?`)
)

// mask writes s with numbers and hexadecimal ids as "#", the CPU
// kernels' level as LEVEL and its spaces collapsed.
func mask(s string) string {
	s = levels.ReplaceAllString(s, "kernels LEVEL")
	s = ids.ReplaceAllStringFunc(s, func(m string) string {
		if strings.ContainsAny(m, "0123456789") {
			return "#"
		}
		return m
	})
	return strings.TrimSpace(spaces.ReplaceAllString(numbers.ReplaceAllString(s, "#"), " "))
}

// Outline is the HTML's elements in document order, each indented by its
// depth: the tag, the kept attributes, and its own text (not its
// children's). Scripts and styles are left out, an SVG drawing shows as
// its root alone (its shapes are numbers), and an element marked
// data-measured (a live timing, whose very words depend on the machine's
// speed) as its tag alone.
func Outline(r io.Reader) (string, error) { return OutlineMasking(r, "") }

// OutlineMasking is Outline with every element that matches the CSS
// selector written as its tag and kept attributes alone, its text and
// children left out: a part every page shares (the site's nav bar),
// which a golden of its own checks, so that changing it does not rewrite
// every page's golden. An empty selector masks nothing.
func OutlineMasking(r io.Reader, selector string) (string, error) {
	doc, err := goquery.NewDocumentFromReader(r)
	if err != nil {
		return "", err
	}
	masked := doc.Selection.Slice(0, 0) // nothing
	if selector != "" {
		masked = doc.Find(selector)
	}
	return outline(doc.Selection, 0, masked), nil
}

// OutlineOf is the outline of the first element that matches the CSS
// selector, itself and everything in it; an error when none does.
func OutlineOf(r io.Reader, selector string) (string, error) {
	doc, err := goquery.NewDocumentFromReader(r)
	if err != nil {
		return "", err
	}
	sel := doc.Find(selector).First()
	if sel.Length() == 0 {
		return "", fmt.Errorf("no element matches %q", selector)
	}
	var b strings.Builder
	line(&b, sel, goquery.NodeName(sel), 0)
	b.WriteString(outline(sel, 1, sel.Slice(0, 0)))
	return b.String(), nil
}

// outline is the outline of top's children from depth0 on, the elements
// of masked by their own line alone.
func outline(top *goquery.Selection, depth0 int, masked *goquery.Selection) string {
	var b strings.Builder
	var walk func(sel *goquery.Selection, depth int)
	walk = func(sel *goquery.Selection, depth int) {
		sel.Children().Each(func(_ int, c *goquery.Selection) {
			name := goquery.NodeName(c)
			switch name {
			case "script", "style", "head":
				return
			}
			if _, measured := c.Attr("data-measured"); measured {
				// a live measurement: its words depend on the machine's speed
				b.WriteString(strings.Repeat("  ", depth) + name + " data-measured | (measured)\n")
				return
			}
			if c.IsSelection(masked) {
				// shared by every page: its own golden checks what it holds
				b.WriteString(strings.Repeat("  ", depth) + name + attrs(c) + " | (masked)\n")
				return
			}
			line(&b, c, name, depth)
			if name != "svg" {
				walk(c, depth+1)
			}
		})
	}
	walk(top, depth0)
	return b.String()
}

func line(b *strings.Builder, sel *goquery.Selection, name string, depth int) {
	b.WriteString(strings.Repeat("  ", depth))
	b.WriteString(name + attrs(sel))
	var own strings.Builder
	sel.Contents().Each(func(_ int, c *goquery.Selection) {
		if goquery.NodeName(c) == "#text" {
			own.WriteString(c.Text() + " ")
		}
	})
	if t := mask(own.String()); t != "" {
		b.WriteString(" | " + t)
	}
	b.WriteByte('\n')
}

// attrs is the element's kept attributes, each " name=value", masked.
func attrs(sel *goquery.Selection) string {
	var b strings.Builder
	for _, a := range shown {
		if v, ok := sel.Attr(a); ok {
			b.WriteString(" " + a + "=" + quote(mask(v)))
		}
	}
	return b.String()
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `'`) + `"` }

// Golden compares got with testdata/name.golden, or writes it there
// under -update.
func Golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s changed (-golden +now); if the change is meant, rerun with -update and review the diff:\n%s", path, diff)
	}
}

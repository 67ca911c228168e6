// Package library is the small document set shipped with the lessons and
// a BM25 search over it: what the agent page's retrieval task reads
// before the model answers, so the cost of retrieval-augmented generation
// is measured on a real pipeline (search, a longer prompt, the answer).
package library

import (
	"embed"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strings"
	"unicode"
)

//go:embed docs/*.md
var files embed.FS

// Doc is one document: its title (the first line, without "# ") and text.
type Doc struct {
	Name, Title, Text string
	terms             map[string]int
	length            int
}

// Hit is a document found for a query, with its BM25 score.
type Hit struct {
	Doc   *Doc
	Score float64
}

// Index is a BM25 index (Robertson's, with Lucene's idf: ln(1 + (N − n +
// 0.5) / (n + 0.5)), k1 = 1.2, b = 0.75) over documents.
type Index struct {
	Docs   []*Doc
	df     map[string]int
	avgLen float64
}

// BM25's parameters.
const (
	K1 = 1.2
	B  = 0.75
)

// Terms are the words of s, lower-cased: runs of letters and digits.
func Terms(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// New indexes docs.
func New(docs []*Doc) *Index {
	x := &Index{Docs: docs, df: map[string]int{}}
	total := 0
	for _, d := range docs {
		d.terms = map[string]int{}
		for _, t := range Terms(d.Title + " " + d.Text) {
			d.terms[t]++
			d.length++
		}
		for t := range d.terms {
			x.df[t]++
		}
		total += d.length
	}
	if len(docs) > 0 {
		x.avgLen = float64(total) / float64(len(docs))
	}
	return x
}

// Builtin indexes the shipped documents.
func Builtin() (*Index, error) {
	names, err := fs.Glob(files, "docs/*.md")
	if err != nil {
		return nil, err
	}
	var docs []*Doc
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		title, text, ok := strings.Cut(strings.TrimSpace(string(b)), "\n")
		if !ok || !strings.HasPrefix(title, "# ") {
			return nil, fmt.Errorf("library: %s: want a first line '# title', then the text", n)
		}
		docs = append(docs, &Doc{Name: strings.TrimSuffix(strings.TrimPrefix(n, "docs/"), ".md"), Title: strings.TrimPrefix(title, "# "), Text: strings.TrimSpace(text)})
	}
	return New(docs), nil
}

// IDF is a term's inverse document frequency.
func (x *Index) IDF(term string) float64 {
	n := float64(x.df[term])
	return math.Log(1 + (float64(len(x.Docs))-n+0.5)/(n+0.5))
}

// Score is d's BM25 score for the query's terms (a term repeated in the
// query counts each time, as in Lucene).
func (x *Index) Score(d *Doc, query []string) float64 {
	var s float64
	norm := K1 * (1 - B + B*float64(d.length)/x.avgLen)
	for _, t := range query {
		f := float64(d.terms[t])
		if f == 0 {
			continue
		}
		s += x.IDF(t) * f * (K1 + 1) / (f + norm)
	}
	return s
}

// Search returns the k best documents with a positive score, best first
// (ties in the documents' order).
func (x *Index) Search(query string, k int) []Hit {
	q := Terms(query)
	var hits []Hit
	for _, d := range x.Docs {
		if s := x.Score(d, q); s > 0 {
			hits = append(hits, Hit{d, s})
		}
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return hits[:min(k, len(hits))]
}

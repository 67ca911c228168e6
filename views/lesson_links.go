package views

import (
	"sort"
	"strings"
)

// Segment is a piece of narration: plain text, text linking to one of
// the site's pages, or a glossary term (Term its key) as the text writes
// it.
type Segment struct {
	Text, Href string
	Term       string
}

// sitePages are the pages narration names ("the Serving page"), linked
// wherever a paragraph names them.
var sitePages = map[string]string{
	"Serving page":      "/serving",
	"Memory page":       "/memory",
	"Quantization page": "/quantization",
	"Compare page":      "/compare",
	"Classroom page":    "/classroom",
	"Patching page":     "/patching",
}

// LinkPages cuts a paragraph into segments, each name of a site page
// ("Serving page") a link to it.
func LinkPages(para string) []Segment {
	names := make([]string, 0, len(sitePages))
	for n := range sitePages {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	var out []Segment
	for para != "" {
		at, name := -1, ""
		for _, n := range names {
			if i := strings.Index(para, n); i >= 0 && (at < 0 || i < at) {
				at, name = i, n
			}
		}
		if at < 0 {
			out = append(out, Segment{Text: para})
			break
		}
		if at > 0 {
			out = append(out, Segment{Text: para[:at]})
		}
		out = append(out, Segment{Text: name, Href: sitePages[name]})
		para = para[at+len(name):]
	}
	return out
}

// Glossed cuts a paragraph into segments: site pages linked (LinkPages)
// and each glossary term's first use a Term, so lessons explain their
// words from the glossary the pages use.
func Glossed(para string) []Segment {
	var out []Segment
	seen := map[string]bool{}
	for _, s := range LinkPages(para) {
		if s.Href != "" {
			out = append(out, s)
			continue
		}
		out = append(out, termSegments(s.Text, seen)...)
	}
	return out
}

// termSegments marks in text the first use of each glossary term not yet
// seen, as a whole word (its first letter may be a capital).
func termSegments(text string, seen map[string]bool) []Segment {
	var out []Segment
	for text != "" {
		at, key, n := -1, "", 0
		for k := range Glossary {
			if seen[k] {
				continue
			}
			if i, m := findWord(text, k); i >= 0 && (at < 0 || i < at || i == at && m > n) {
				at, key, n = i, k, m
			}
		}
		if at < 0 {
			return append(out, Segment{Text: text})
		}
		if at > 0 {
			out = append(out, Segment{Text: text[:at]})
		}
		out = append(out, Segment{Text: text[at : at+n], Term: key})
		seen[key] = true
		text = text[at+n:]
	}
	return out
}

// findWord finds term (or it with a capital first letter, or its plural
// in s) in s as a whole word: where it starts and how long it is, or -1.
func findWord(s, term string) (int, int) {
	for _, t := range []string{term, strings.ToUpper(term[:1]) + term[1:]} {
		for from := 0; from < len(s); {
			i := strings.Index(s[from:], t)
			if i < 0 {
				break
			}
			i += from
			end := i + len(t)
			if end < len(s) && s[end] == 's' && (end+1 == len(s) || !isWordByte(s[end+1])) {
				end++ // a plural
			}
			if (i == 0 || !isWordByte(s[i-1])) && (end == len(s) || !isWordByte(s[end])) {
				return i, end - i
			}
			from = i + 1
		}
	}
	return -1, 0
}

func isWordByte(b byte) bool {
	return b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// narrationSegments is Glossed, or LinkPages alone when the paragraph
// must not be glossed.
func narrationSegments(para string, gloss bool) []Segment {
	if gloss {
		return Glossed(para)
	}
	return LinkPages(para)
}

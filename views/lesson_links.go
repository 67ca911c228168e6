package views

import (
	"sort"
	"strings"
)

// Segment is a piece of narration: plain text, or text linking to one of
// the site's pages.
type Segment struct {
	Text, Href string
}

// sitePages are the pages narration names ("the Serving page"), linked
// wherever a paragraph names them.
var sitePages = map[string]string{
	"Serving page":      "/serving",
	"Memory page":       "/memory",
	"Quantization page": "/quantization",
	"Compare page":      "/compare",
	"Classroom page":    "/classroom",
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

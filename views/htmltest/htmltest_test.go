package htmltest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const page = `<html><body><header><h1>Title 3</h1>` +
	`<nav class="site" aria-label="pages"><a href="/">One</a> · <a href="/b">Two</a></nav></header>` +
	`<main><p>Body 42</p></main></body></html>`

// A masked element keeps its own line, attributes included, and loses its
// text and children; OutlineOf gives that element whole; the rest of the
// page is outlined as Outline does.
func TestOutlineMasking(t *testing.T) {
	tests := []struct {
		name, selector, want string
		of                   bool
	}{
		{"nothing masked", "", "html\n  body\n    header\n      h1 | Title #\n      nav class=\"site\" aria-label=\"pages\" | ·\n" +
			"        a href=\"/\" | One\n        a href=\"/b\" | Two\n    main\n      p | Body #\n", false},
		{"the nav masked", "nav", "html\n  body\n    header\n      h1 | Title #\n      nav class=\"site\" aria-label=\"pages\" | (masked)\n" +
			"    main\n      p | Body #\n", false},
		{"the nav alone", "nav", "nav class=\"site\" aria-label=\"pages\" | ·\n  a href=\"/\" | One\n  a href=\"/b\" | Two\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			var err error
			if tt.of {
				got, err = OutlineOf(strings.NewReader(page), tt.selector)
			} else {
				got, err = OutlineMasking(strings.NewReader(page), tt.selector)
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// OutlineOf names the selector nothing matched, rather than outlining
// nothing.
func TestOutlineOfMissing(t *testing.T) {
	_, err := OutlineOf(strings.NewReader(page), "aside")
	if err == nil || !strings.Contains(err.Error(), `"aside"`) {
		t.Errorf("err = %v, want one naming the selector", err)
	}
}

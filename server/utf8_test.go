package server

import (
	"context"
	"io"
	"testing"
	"unicode/utf8"

	"github.com/a-h/templ"
)

// A page or fragment comes out valid UTF-8 whatever its component wrote;
// valid text is unchanged.
func TestRenderHTMLIsUTF8(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`<td data-answer=" Sa">`, `<td data-answer=" Sa">`},
		{"<code>猫</code>", "<code>猫</code>"},
		{`<td data-answer="` + "\x8a" + `">`, `<td data-answer="` + "\uFFFD" + `">`},
		{"<p>\xe7\x8c</p>", "<p>\uFFFD</p>"},
	} {
		comp := templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
			_, err := io.WriteString(w, tt.in)
			return err
		})
		got, err := renderHTML(context.Background(), comp)
		if err != nil || !utf8.Valid(got) || string(got) != tt.want {
			t.Errorf("renderHTML(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		if frag := renderBytes(context.Background(), comp); string(frag) != tt.want {
			t.Errorf("renderBytes(%q) = %q; want %q", tt.in, frag, tt.want)
		}
	}
}

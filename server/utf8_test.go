package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
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

// waitUTF8 returns c's first message containing want; every message up to
// it must be valid UTF-8 that the views wrote so (no U+FFFD: the last
// guard replaced nothing).
func (c *wsClient) waitUTF8(who, want string) string {
	c.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				c.t.Fatalf("%s: disconnected waiting for %q", who, want)
			}
			if !utf8.ValidString(m) || strings.ContainsRune(m, utf8.RuneError) {
				c.t.Fatalf("%s: a frame that is not UTF-8 as written: %q", who, m)
			}
			if strings.Contains(m, want) {
				return m
			}
		case <-deadline:
			c.t.Fatalf("%s: no message with %q", who, want)
		}
	}
}

// The room of the issue: on "The head that copies", step 1, the model's
// top list holds a byte token (id 138, the byte 0x8a alone). Reveal
// reaches the instructor, the projector, a laptop and a phone as valid
// UTF-8, the token shown quoted ("\x8a") as the Explorer shows it, and
// nobody is disconnected; the pages served after it are valid too. The
// question comes with its prompt on every screen.
func TestRoomRevealWithAByteToken(t *testing.T) {
	_, ts := classServer(t, "")
	code, key := startRoom(t, ts.URL, url.Values{"lesson": {"the-head-that-copies"}})
	phone := http.Header{"User-Agent": {"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Mobile/15E148"}}
	clients := []struct {
		who  string
		c    *wsClient
		note string // its answer to an action it may not send
	}{
		{"instructor", dialRoom(t, ts.URL, code, "key="+key), "unknown action"},
		{"projector", dialRoom(t, ts.URL, code, "projector"), "takes no actions"},
		{"laptop", dialRoom(t, ts.URL, code, newStudent(t, ts.URL, code)), "unknown action"},
		{"phone", dialRoomWith(t, ts.URL, code, newStudent(t, ts.URL, code), phone), "unknown action"},
	}
	prompt := `<code> Ab dog movie hill fox Port Sa gave Dom Eurcebab Ab dog movie hill fox Port</code>` // the question's text
	for _, x := range clients {
		if m := x.c.waitUTF8(x.who, `data-testid="poll"`); !strings.Contains(m, prompt) {
			t.Errorf("%s: the question comes without its prompt: %.2000s", x.who, m)
		}
	}
	clients[2].c.send(map[string]string{"action": "answer", "answer": " Sa"})
	clients[3].c.send(map[string]string{"action": "answer", "answer": " gave"})
	clients[0].c.waitUTF8("instructor", `data-testid="answered">2<`)
	clients[0].c.send(map[string]string{"action": "reveal"})
	byteRow := `data-testid="poll-result" data-answer="&#34;\x8a&#34;"`
	for _, x := range clients {
		m := x.c.waitUTF8(x.who, `data-revealed="true"`)
		if !strings.Contains(m, byteRow) || !strings.Contains(m, `<code>&#34;\x8a&#34;</code>`) {
			t.Errorf("%s: the reveal does not list the byte token as the Explorer shows it: %.3000s", x.who, m)
		}
	}
	clients[2].c.waitUTF8("laptop", "matches the engine")
	clients[3].c.waitUTF8("phone", `the engine&#39;s answer is &#34; Sa&#34;`)
	for _, x := range clients {
		x.c.send(map[string]string{"action": "no-such-action"}) // answered with a note: still connected
		x.c.waitUTF8(x.who, x.note)
	}
	for _, path := range []string{"/rooms/" + code, "/rooms/" + code + "/projector"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !utf8.Valid(body) || bytes.ContainsRune(body, utf8.RuneError) || !bytes.Contains(body, []byte(byteRow)) {
			t.Errorf("GET %s after the reveal: valid UTF-8 %v, the byte token's row %v", path, utf8.Valid(body), bytes.Contains(body, []byte(byteRow)))
		}
	}
}

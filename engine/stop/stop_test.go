package stop

import (
	"strings"
	"testing"
)

// feed pushes text in pieces of size n and returns what was released and
// whether a stop ended it.
func feed(stops []string, text string, n int) (string, bool) {
	st := New(stops)
	var out strings.Builder
	for i := 0; i < len(text); i += n {
		t, done := st.Push([]byte(text[i:min(len(text), i+n)]))
		out.WriteString(t)
		if done {
			return out.String(), true
		}
	}
	out.WriteString(st.Flush())
	return out.String(), false
}

// Stop strings are found wherever the token boundaries fall, and no byte
// of one is ever released; half a UTF-8 character waits for its rest.
func TestAcrossTokens(t *testing.T) {
	cases := []struct {
		stops      []string
		text, want string
		stopped    bool
	}{
		{[]string{"\n\n"}, "Hello there.\n\nNext", "Hello there.", true},
		{[]string{"The end"}, "and they lived. The end. More", "and they lived. ", true},
		{[]string{"xyz", "lived"}, "and they lived. xyz", "and they ", true},
		{[]string{"zz"}, "no stop here z", "no stop here z", false},
		{nil, "plain text", "plain text", false},
		{[]string{"é!"}, "café!", "caf", true},
		{[]string{"ab"}, "aab", "a", true},
		{[]string{""}, "empty stops are ignored", "empty stops are ignored", false},
	}
	for _, c := range cases {
		for n := 1; n <= len(c.text); n++ {
			got, stopped := feed(c.stops, c.text, n)
			if got != c.want || stopped != c.stopped {
				t.Errorf("%q in pieces of %d with stops %q: %q, %v; want %q, %v", c.text, n, c.stops, got, stopped, c.want, c.stopped)
			}
		}
	}
	st := New([]string{"STOP"})
	if got, _ := st.Push([]byte("abc ST")); got != "abc " {
		t.Errorf("released %q while a stop may be forming", got)
	}
	if got, _ := st.Push([]byte("\xc3")); got != "ST" {
		t.Errorf("released %q with half a character", got)
	}
	if got, _ := st.Push([]byte("\xa9")); got != "é" {
		t.Errorf("released %q", got)
	}
}

// Whatever the text and the pieces, the released text is the text up to
// the first stop (or all of it) and never holds a stop string.
func FuzzMatcher(f *testing.F) {
	f.Add("hello\n\nworld", "\n\n", 3)
	f.Add("aaaab", "aab", 1)
	f.Fuzz(func(t *testing.T, text, stop string, n int) {
		if n < 1 || n > 64 || len(text) > 512 {
			return
		}
		got, stopped := feed([]string{stop}, text, n)
		want, hasStop := text, false
		if stop != "" {
			if k := strings.Index(text, stop); k >= 0 {
				want, hasStop = text[:k], true
			}
		}
		if got != want || stopped != hasStop {
			t.Fatalf("%q stop %q pieces %d: %q %v, want %q %v", text, stop, n, got, stopped, want, hasStop)
		}
	})
}

package session

import (
	"strings"
	"testing"

	"stepthrough/engine/speculative"
)

// Spellings of one conversion share one canonical name; bad types and
// conversions of conversions are refused naming the name.
func TestCanonicalName(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{"lesson.gguf", "lesson.gguf", ""},
		{"lesson.gguf@f16", "lesson.gguf@F16", ""},
		{"lesson.gguf@ f16", "lesson.gguf@F16", ""},
		{"lesson.gguf@\tq4_k_m\n", "lesson.gguf@Q4_K_M", ""},
		{"lesson.gguf@F32", "", "choose one of"},
		{"lesson.gguf@F16@Q8_0", "", "cannot be converted again"},
		{"lesson.gguf@", "", "choose one of"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := canonicalName(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %q, %v; want an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// The cache keeps what fits its budget, least recently used out first.
func TestConvCacheLRU(t *testing.T) {
	c := convCache{budget: 100}
	for _, n := range []string{"a", "b", "c"} {
		if out := c.add(&conversion{name: n, bytes: 40}); n == "c" && (len(out) != 1 || out[0].name != "b") {
			t.Fatalf("adding c pushed out %d conversions, want b alone", len(out))
		}
		if n == "b" {
			c.get("a") // a is used again: b is now the oldest
		}
	}
	var names []string
	for _, x := range c.items {
		names = append(names, x.name)
	}
	if strings.Join(names, ",") != "a,c" || c.used != 80 {
		t.Errorf("held %v (%d bytes)", names, c.used)
	}
}

// FuzzModelName: a model reference (NAME@TYPE, self:N, a file name) is
// parsed to one canonical form, which parses to itself, or refused with
// a sentence; nothing panics.
func FuzzModelName(f *testing.F) {
	for _, s := range []string{"lesson.gguf", "lesson.gguf@ f16", "a@b@c", "self:2", "self:-1", "self:99999999999999999999", "@", "x@q4_k_m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if c, err := canonicalName(name); err == nil {
			if again, err := canonicalName(c); err != nil || again != c {
				t.Fatalf("%q → %q → %q, %v", name, c, again, err)
			}
		} else if err.Error() == "" {
			t.Fatal("an empty error")
		}
		if n, self, err := speculative.SelfLayers(name); err == nil && self && n < 1 {
			t.Fatalf("self:%d accepted from %q", n, name)
		}
	})
}

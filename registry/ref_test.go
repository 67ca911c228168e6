package registry

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Spellings of one reference share one canonical Ref; bad types,
// conversions of conversions and malformed drafts are refused naming the
// reference.
func TestParseRef(t *testing.T) {
	cases := []struct {
		in   string
		want Ref
		err  string
	}{
		{in: "lesson.gguf", want: Ref{File: "lesson.gguf"}},
		{in: "lesson.gguf@f16", want: Ref{File: "lesson.gguf", Quant: "F16"}},
		{in: "lesson.gguf@ f16", want: Ref{File: "lesson.gguf", Quant: "F16"}},
		{in: "lesson.gguf@\tq4_k_m\n", want: Ref{File: "lesson.gguf", Quant: "Q4_K_M"}},
		{in: "self:2", want: Ref{SelfLayers: 2}},
		{in: "lesson.gguf@q8_0+self:3", want: Ref{File: "lesson.gguf", Quant: "Q8_0", SelfLayers: 3}},
		{in: "lesson.gguf@F32", err: "choose one of"},
		{in: "lesson.gguf@F16@Q8_0", err: "cannot be converted again"},
		{in: "lesson.gguf@", err: "choose one of"},
		{in: "self:0", err: "write self:N"},
		{in: "lesson.gguf+self:x", err: "write self:N"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseRef(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %+v, %v; want an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("ParseRef(%q) (-want +got):\n%s", c.in, diff)
			}
		})
	}
}

// A bare self:N takes its target's file and type.
func TestRefOn(t *testing.T) {
	target := Ref{File: "a.gguf", Quant: "Q4_0"}
	if diff := cmp.Diff(Ref{File: "a.gguf", Quant: "Q4_0", SelfLayers: 2}, (Ref{SelfLayers: 2}).On(target)); diff != "" {
		t.Error(diff)
	}
	if other := (Ref{File: "b.gguf"}); other.On(target) != other {
		t.Error("a whole model changed by On")
	}
}

// The cache keeps what fits its budget, least recently used out first.
func TestConvCacheLRU(t *testing.T) {
	c := convCache{budget: 100}
	for _, n := range []string{"a", "b", "c"} {
		if out := c.add(&conversion{ref: Ref{File: n}, bytes: 40}); n == "c" && (len(out) != 1 || out[0].ref.File != "b") {
			t.Fatalf("adding c pushed out %d conversions, want b alone", len(out))
		}
		if n == "b" {
			c.get(Ref{File: "a"}) // a is used again: b is now the oldest
		}
	}
	var names []string
	for _, x := range c.items {
		names = append(names, x.ref.File)
	}
	if strings.Join(names, ",") != "a,c" || c.used != 80 {
		t.Errorf("held %v (%d bytes)", names, c.used)
	}
}

// FuzzModelName: a model reference (NAME@TYPE, self:N, a file name) is
// parsed to one canonical Ref, whose written form parses to itself, or
// refused with a sentence; nothing panics.
func FuzzModelName(f *testing.F) {
	for _, s := range []string{"lesson.gguf", "lesson.gguf@ f16", "a@b@c", "self:2", "self:-1", "self:99999999999999999999", "@", "x@q4_k_m", "x@q8_0+self:2", "+self:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		r, err := ParseRef(name)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		if r.SelfLayers < 0 {
			t.Fatalf("self:%d accepted from %q", r.SelfLayers, name)
		}
		again, err := ParseRef(r.String())
		if err != nil || again != r {
			t.Fatalf("%q → %+v → %q → %+v, %v", name, r, r.String(), again, err)
		}
	})
}

package lessons

import (
	"strings"
	"testing"
)

func TestParseClaim(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Claim
	}{
		{`top " Par"`, Claim{Kind: "top", Text: " Par"}},
		{`p " Par" > 0.9`, Claim{Kind: "p", Text: " Par", Op: ">", Value: 0.9}},
		{`p "<" <= 0.1`, Claim{Kind: "p", Text: "<", Op: "<=", Value: 0.1}},
		{`draws " brown"`, Claim{Kind: "draws", Text: " brown"}},
		{`tokens 12`, Claim{Kind: "tokens", Value: 12}},
		{`attends " Zor"`, Claim{Kind: "attends", Text: " Zor"}},
		{`continues " Paris."`, Claim{Kind: "continues", Text: " Paris."}},
		{`calls "347+85"`, Claim{Kind: "calls", Text: "347+85"}},
		{`length 40`, Claim{Kind: "length", Value: 40}},
		{`pieces " big" 2`, Claim{Kind: "pieces", Text: " big", Value: 2}},
		{`pieces "こ" 3`, Claim{Kind: "pieces", Text: "こ", Value: 3}},
	} {
		got, err := parseClaim(3, c.in)
		c.want.Line = 3
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{``, `guess " x"`, `top`, `top ""`, `p " x"`, `p " x" > 2`, `p " x" > NaN`, `p " x" > `, `tokens`, `tokens -1`, `tokens many`, `pieces " big"`, `pieces 2`, `pieces "" 2`} {
		if _, err := parseClaim(1, bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
	if !(Claim{Op: ">", Value: 0.5}).Holds(0.6) || (Claim{Op: "<", Value: 0.5}).Holds(0.6) || !(Claim{Op: ">=", Value: 0.5}).Holds(0.5) || (Claim{Op: "?", Value: 0}).Holds(1) {
		t.Error("Holds")
	}
}

// A bad expect line is an error naming the line.
func TestExpectLineErrors(t *testing.T) {
	src := "---\ntitle: x\nmodel: lesson.gguf\n---\n## a\nprompt: hi\nexpect: top\n"
	_, err := Parse("x.md", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "x.md:7") {
		t.Errorf("got %v", err)
	}
}

// The mechanism claims parse, print back as written, and refuse a bad
// head, bound, layer or position in one line naming it.
func TestMechanismClaims(t *testing.T) {
	for _, tc := range []struct{ in, out, err string }{
		{in: `induction L4H5 > 0.3`, out: `induction L4H5 > 0.3`},
		{in: `copying <= 0.1`, out: `copying <= 0.1`},
		{in: `restores 3 5 "The capital of Spain is" > 0.9`, out: `restores 3 5 "The capital of Spain is" > 0.9`},
		{in: `induction L0H5 > 0.3`, err: "write induction L4H5"},
		{in: `induction L4H5 > 3`, err: "not a fraction"},
		{in: `induction L4H5`, err: "end with a bound"},
		{in: `copying 0.5 < 0.1`, err: "only a bound"},
		{in: `restores 0 5 "x" > 0.9`, err: "a layer from 1 and a position from 0"},
		{in: `restores 3 -1 "x" > 0.9`, err: "a layer from 1 and a position from 0"},
		{in: `restores 3 0 "x" > 0.9`, out: `restores 3 0 "x" > 0.9`},
		{in: `restores 3 "x" > 0.9`, err: "a layer from 1, a position from 0"},
		{in: `arch qwen3`, out: `arch qwen3`},
		{in: `feature qk-norm`, out: `feature qk-norm`},
		{in: `lacks learned-positions`, out: `lacks learned-positions`},
		{in: `arch`, err: "one name"},
		{in: `feature "qk-norm"`, err: "unquoted"},
		{in: `lacks a b`, err: "one name"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			c, err := parseClaim(1, tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n") {
					t.Errorf("%v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil || c.String() != tc.out {
				t.Errorf("%q (%v), want %q", c.String(), err, tc.out)
			}
		})
	}
}

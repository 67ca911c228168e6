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

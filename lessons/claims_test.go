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
		t.Run(tc.in, func(t *testing.T) { checkClaimLine(t, tc.in, tc.out, tc.err) })
	}
}

// The claims about conversions, timing, a context's cache and the
// training text parse, print back as written, and refuse a bad type,
// count, bound, context or text in one line naming it.
func TestQualityClaims(t *testing.T) {
	for _, tc := range []struct{ in, out, err string }{
		{in: `holds Q8_0 14`, out: `holds Q8_0 14`},
		{in: `holds q6_k ffn_down`, out: `holds Q6_K ffn_down`},
		{in: `holds F32 0`, out: `holds F32 0`},
		{in: `holds Q7_0 14`, err: "unknown tensor type"},
		{in: `holds Q8_0`, err: "a type, then a count"},
		{in: `holds Q8_0 -1`, err: "a count of tensors from 0"},
		{in: `holds Q8_0 "ffn_down"`, err: "unquoted"},
		{in: `kl < 0.02`, out: `kl < 0.02`},
		{in: `kl > 0.03`, out: `kl > 0.03`},
		{in: `kl 0.02`, err: "end with a bound"},
		{in: `kl Q4_0 < 0.02`, err: "only a bound"},
		{in: `prefill < 1`, out: `prefill < 1`},
		{in: `prefill < 2`, err: "not a fraction"},
		{in: `kvcontext "Llama 2 70B" 4096 1.34`, out: `kvcontext "Llama 2 70B" 4096 1.34`},
		{in: `kvcontext "Llama 2 70B" 0 1.34`, err: "a context in tokens from 1"},
		{in: `kvcontext "Llama 2 70B" 4096`, err: "a context in tokens from 1"},
		{in: `kvcontext 4096 1.34`, err: "write kvcontext"},
		{in: `unseen "Zorvik"`, out: `unseen "Zorvik"`},
		{in: `unseen ""`, err: "name the token or text"},
	} {
		t.Run(tc.in, func(t *testing.T) { checkClaimLine(t, tc.in, tc.out, tc.err) })
	}
}

// checkClaimLine parses an expect line's value and wants either its
// printed form out or an error of one line holding msg.
func checkClaimLine(t *testing.T, in, out, msg string) {
	t.Helper()
	c, err := parseClaim(1, in)
	if msg != "" {
		if err == nil || !strings.Contains(err.Error(), msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v, want an error with %q", err, msg)
		}
		return
	}
	if err != nil || c.String() != out {
		t.Errorf("%q (%v), want %q", c.String(), err, out)
	}
}

// The claims beside another weight type parse, print back as written,
// and refuse a bad layer or bound in one line naming it.
func TestDriftClaims(t *testing.T) {
	for _, tc := range []struct{ in, out, err string }{
		{in: `drift 4 > 0.05`, out: `drift 4 > 0.05`},
		{in: `cosine 1 >= 0.99`, out: `cosine 1 >= 0.99`},
		{in: `driftmost 4`, out: `driftmost 4`},
		{in: `vstop " sock"`, out: `vstop " sock"`},
		{in: `drift 0 > 0.05`, err: "the layer, from 1"},
		{in: `drift four > 0.05`, err: "the layer, from 1"},
		{in: `drift 4`, err: "end with a bound"},
		{in: `drift 4 > 5`, err: "not a fraction"},
		{in: `cosine 4 x > 0.9`, err: "a layer, then a bound"},
		{in: `driftmost 4 > 0.1`, err: "only a layer"},
		{in: `vstop`, err: "name the token"},
	} {
		t.Run(tc.in, func(t *testing.T) { checkClaimLine(t, tc.in, tc.out, tc.err) })
	}
}

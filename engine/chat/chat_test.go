package chat

import (
	"errors"
	"testing"
)

func TestRender(t *testing.T) {
	got, err := Render([]Message{{"system", SystemCalculator}, {"user", "What is 2 + 3?"}}, true)
	want := "<|system|>You can use the calculator.<|end|><|user|>What is 2 + 3?<|end|><|assistant|>"
	if err != nil || got != want {
		t.Fatalf("%q, %v", got, err)
	}
	if _, err := Render([]Message{{"tool", "x"}}, false); err == nil {
		t.Error("unknown role: want an error")
	}
}

func TestCalc(t *testing.T) {
	for _, c := range []struct{ expr, want string }{{"347+85", "432"}, {"12-30", "-18"}, {"0+0", "0"}, {"999+999", "1998"}} {
		if got, err := Calc(c.expr); err != nil || got != c.want {
			t.Errorf("%s = %q, %v; want %s", c.expr, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "+", "3+", "+3", "3*4", "3 + 4", "1+2+3", "99999999999+1", "a+b", "-3+4", "3+-4"} {
		if _, err := Calc(bad); !errors.Is(err, ErrCall) {
			t.Errorf("Calc(%q): %v, want ErrCall", bad, err)
		}
	}
	if e, ok := Call("So <calc>3+4</calc>"); !ok || e != "3+4" {
		t.Errorf("Call: %q %v", e, ok)
	}
	if _, ok := Call("<calc>3+4</calc><result>7</result>"); ok {
		t.Error("an answered call is not pending")
	}
	if e, v, ok := Execute("<calc>347+85</calc>"); !ok || e != "347+85" || v != "432" {
		t.Errorf("Execute: %q %q %v", e, v, ok)
	}
	if _, v, ok := Execute("<calc>3*4</calc>"); !ok || v != callError {
		t.Errorf("Execute of a bad call: %q %v", v, ok)
	}
}

func FuzzCalc(f *testing.F) {
	f.Add("347+85")
	f.Add("1-2")
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := Calc(s); err == nil && v == "" {
			t.Fatalf("%q: empty result", s)
		}
	})
}

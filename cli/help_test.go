package cli

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"
)

// Every command answers -h with exit 0, its usage line and every flag it
// defines; "stepthrough -h" lists every command.
func TestHelpListsEveryFlag(t *testing.T) {
	var top bytes.Buffer
	if code := Main(context.Background(), Env{Stdout: &top, Stderr: &top}, []string{"-h"}); code != 0 {
		t.Fatalf("stepthrough -h: exit %d", code)
	}
	for name := range commands {
		if !strings.Contains(top.String(), "  "+name+" ") {
			t.Errorf("stepthrough -h does not list %s:\n%s", name, top.String())
		}
		var o, e bytes.Buffer
		if code := Main(context.Background(), Env{Stdout: &o, Stderr: &e}, []string{name, "-h"}); code != 0 {
			t.Errorf("%s -h: exit %d (%s)", name, code, e.String())
			continue
		}
		if !strings.HasPrefix(o.String(), "usage: stepthrough "+name) {
			t.Errorf("%s -h starts %q", name, o.String())
		}
		found := false
		for fs := range helps {
			if fs.Name() != name {
				continue
			}
			found = true
			fs.VisitAll(func(f *flag.Flag) {
				if !strings.Contains(o.String(), "-"+f.Name) {
					t.Errorf("%s -h does not list -%s:\n%s", name, f.Name, o.String())
				}
			})
		}
		if !found {
			t.Errorf("%s defines no flag set", name)
		}
	}
	var o, e bytes.Buffer
	if code := Main(context.Background(), Env{Stdout: &o, Stderr: &e}, []string{"nonsense"}); code != 2 || !strings.Contains(e.String(), `unknown command "nonsense"`) {
		t.Errorf("unknown command: exit %d, %q", code, e.String())
	}
}

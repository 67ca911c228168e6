package cli

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"

	"stepthrough/engine/reftest"
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
	// "help COMMAND" is "COMMAND -h"
	var h, dash bytes.Buffer
	Main(context.Background(), Env{Stdout: &h, Stderr: &h}, []string{"help", "pull"})
	Main(context.Background(), Env{Stdout: &dash, Stderr: &dash}, []string{"pull", "-h"})
	if h.String() != dash.String() || !strings.Contains(h.String(), "HF_TOKEN") {
		t.Errorf("help pull:\n%s\npull -h:\n%s", h.String(), dash.String())
	}
}

// tokenize and inspect read vocabulary-only files (llama.cpp's tokenizer
// test files have no weights and architectures the engine cannot run).
func TestVocabOnlyFiles(t *testing.T) {
	phi3 := reftest.Path(t, "vocab", "ggml-vocab-phi-3.gguf")
	out, errOut, code := run(t, "tokenize", "--model", phi3, "--text", "Hello </s> world")
	// </s> written as text stays text: ▁</ s >, not the special token 2
	if code != 0 || out != "1 15043 1533 29879 29958 3186\n" {
		t.Errorf("tokenize on a vocabulary-only file: %q (exit %d, %q)", out, code, errOut)
	}
	out, errOut, code = run(t, "inspect", "--model", phi3)
	if code != 0 || !strings.Contains(out, "architecture:  phi3 (tokenizer only:") || !strings.Contains(out, "32064 tokens") {
		t.Errorf("inspect on a vocabulary-only file: %q (exit %d, %q)", out, code, errOut)
	}
	out, _, code = run(t, "inspect", "--model", phi3, "--json")
	if code != 0 || !strings.Contains(out, `"vocab_only"`) {
		t.Errorf("inspect --json on a vocabulary-only file: %q", out)
	}
	if _, errOut, code := run(t, "generate", "--model", phi3, "--prompt", "x", "-n", "1"); code != 1 || !strings.Contains(errOut, "no weight tensors") {
		t.Errorf("generate on a vocabulary-only file: exit %d, %q", code, errOut)
	}
}

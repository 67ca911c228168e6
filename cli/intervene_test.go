package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// logits --lens writes every layer's prediction at every position (the
// last layer's is the model's, so the final prediction ranks first
// there); --ablate changes what the layers predict; generate --ablate
// generates with the edits; edits outside the model are refused.
func TestLensAndAblateCommands(t *testing.T) {
	m := stories(t)
	lens := func(args ...string) LensOut {
		t.Helper()
		out, errOut, code := run(t, append([]string{"logits", "--model", m, "--prompt", "Once upon a time", "--lens"}, args...)...)
		if code != 0 {
			t.Fatalf("logits --lens %v: %s", args, errOut)
		}
		var l LensOut
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	plain := lens()
	if len(plain.Layers) < 2 || len(plain.Tokens) != 5 {
		t.Fatalf("%d layers, %d tokens", len(plain.Layers), len(plain.Tokens))
	}
	for l, L := range plain.Layers {
		if L.Layer != l+1 || len(L.Positions) != len(plain.Tokens) {
			t.Fatalf("layer %d: %d positions", L.Layer, len(L.Positions))
		}
	}
	for p, pos := range plain.Layers[len(plain.Layers)-1].Positions {
		if pos.FinalRank != 1 || len(pos.Top) != lensTop {
			t.Errorf("last layer, position %d: final rank %d, %d tokens", p+1, pos.FinalRank, len(pos.Top))
		}
	}
	// the last layer's lens is the logits: its top token is greedy's next
	out, _, _ := run(t, "generate", "--model", m, "--prompt", "Once upon a time", "-n", "1", "--ids", "--temperature", "0")
	if last := plain.Layers[len(plain.Layers)-1].Positions[4].Top[0].ID; strings.TrimSpace(out) != strconv.Itoa(int(last)) {
		t.Errorf("the last layer's top token %d, greedy's %s", last, out)
	}
	ablated := lens("--ablate", "L1mlp")
	if ablated.Ablate != "L1mlp" || slices.EqualFunc(plain.Layers[0].Positions, ablated.Layers[0].Positions, func(a, b LensPos) bool { return a.Top[0] == b.Top[0] }) {
		t.Errorf("switching layer 1's MLP off left layer 1's lens as it was")
	}
	plainGen, _, _ := run(t, "generate", "--model", m, "--prompt", "Once upon a time", "-n", "8", "--ids", "--temperature", "0")
	editGen, errOut, code := run(t, "generate", "--model", m, "--prompt", "Once upon a time", "-n", "8", "--ids", "--temperature", "0", "--ablate", "L1mlp;L2mlp")
	if code != 0 || editGen == plainGen {
		t.Errorf("generate --ablate: %q (exit %d, %s), plain %q", editGen, code, errOut, plainGen)
	}
	for _, bad := range [][]string{{"--ablate", "L99H1"}, {"--ablate", "H1"}, {"--ablate", "L1U99999"}} {
		if _, errOut, code := run(t, append([]string{"logits", "--model", m, "--prompt", "x", "--lens"}, bad...)...); code != 2 || !strings.Contains(errOut, "intervention") {
			t.Errorf("%v: exit %d, %q", bad, code, errOut)
		}
	}
}

// Steering, patching and mean ablation from the command line: a
// zero-strength steer is the plain run bit for bit, a strong one changes
// it; patching the last layer at the last position from another prompt
// gives that prompt's last logits exactly; a head switched off to its
// mean differs from it switched off to zero; incomplete flags are
// refused.
func TestSteerAndPatchCommands(t *testing.T) {
	m := stories(t)
	dir := t.TempDir()
	logits := func(name, prompt string, args ...string) []byte {
		t.Helper()
		out := dir + "/" + name
		if _, errOut, code := run(t, append([]string{"logits", "--model", m, "--prompt", prompt, "--out", out}, args...)...); code != 0 {
			t.Fatalf("%s: %s", name, errOut)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	steer := []string{"--steer-layer", "2", "--steer-toward", "happy sunny day", "--steer-away", "sad rainy night"}
	plain := logits("plain", "Once upon a time")
	if zero := logits("zero", "Once upon a time", append(steer, "--steer-strength", "0")...); !bytes.Equal(zero, plain) {
		t.Error("a steer of strength 0 changed the logits")
	}
	if strong := logits("strong", "Once upon a time", append(steer, "--steer-strength", "8")...); bytes.Equal(strong, plain) {
		t.Error("a steer of strength 8 changed nothing")
	}
	layers := strconv.Itoa(5) // stories260K's
	other := logits("other", "Once upon a day")
	patched := logits("patched", "Once upon a time", "--patch", "L"+layers+"@5", "--patch-from", "Once upon a day")
	row := len(plain) / 5
	if !bytes.Equal(patched[4*row:], other[4*row:]) || bytes.Equal(patched[4*row:], plain[4*row:]) {
		t.Error("patching the last layer's last position did not give the other prompt's last logits")
	}
	if !bytes.Equal(patched[:4*row], plain[:4*row]) {
		t.Error("patching the last position changed the earlier positions' logits")
	}
	zeroed := logits("zeroed", "Once upon a time", "--ablate", "L2H1")
	mean := logits("mean", "Once upon a time", "--ablate", "L2H1", "--mean-over", "Once upon a day, a bird sang.")
	if bytes.Equal(mean, plain) || bytes.Equal(mean, zeroed) || bytes.Equal(zeroed, plain) {
		t.Error("a head switched off to its mean gave the plain or the zeroed logits")
	}
	for _, bad := range [][]string{{"--patch", "L1@1"}, {"--patch", "X", "--patch-from", "a"}, {"--steer-layer", "9", "--steer-toward", "a", "--steer-away", "b"}, {"--steer-layer", "1"},
		{"--mean-over", "a"}, {"--ablate", "L1H1*0.5", "--mean-over", "a"}} {
		if _, errOut, code := run(t, append([]string{"logits", "--model", m, "--prompt", "x", "--lens"}, bad...)...); code != 2 || !strings.Contains(errOut, "intervention") {
			t.Errorf("%v: exit %d, %q", bad, code, errOut)
		}
	}
}

// heads scores every head, sorted by induction score, names those above
// the threshold and measures copying with them switched off.
func TestHeadsCommand(t *testing.T) {
	out, errOut, code := run(t, "heads", "--model", stories(t), "--len", "8", "--reps", "2", "--threshold", "0.02", "--json")
	if code != 0 {
		t.Fatalf("heads: %s", errOut)
	}
	var r HeadsResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.SeqLen != 8 || r.Reps != 2 || len(r.Heads) < 5 {
		t.Fatalf("%+v", r)
	}
	for i, h := range r.Heads {
		if i > 0 && h.Induction > r.Heads[i-1].Induction || h.Induction < 0 || h.Induction > 1 || h.PrevToken < 0 || h.PrevToken > 1 {
			t.Errorf("head %d: %+v", i, h)
		}
		if named := slices.Contains(r.Induction, h.Head); named != (h.Induction >= r.Threshold) {
			t.Errorf("%s with score %g named %v at threshold %g", h.Head, h.Induction, named, r.Threshold)
		}
	}
	if r.CopyIntact < 0 || r.CopyIntact > 1 || r.CopyWithout < 0 || r.CopyWithout > 1 {
		t.Errorf("copy rates %g, %g", r.CopyIntact, r.CopyWithout)
	}
	if _, _, code := run(t, "heads", "--model", stories(t), "--len", "1"); code != 2 {
		t.Errorf("--len 1: exit %d", code)
	}
}

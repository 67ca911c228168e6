package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// Number flags refuse NaN, infinities and values past their bounds (the
// sampler's and a written steering's, as the Explorer has them), with one
// line naming the flag and what it allows.
func TestFloatFlagBounds(t *testing.T) {
	m := stories(t)
	gen := []string{"generate", "--model", m, "--prompt", "Once upon", "-n", "1"}
	steer := append(slices.Clone(gen), "--steer-layer", "1", "--steer-toward", "a", "--steer-away", "b")
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"steer strength NaN", append(slices.Clone(steer), "--steer-strength", "NaN"),
			"stepthrough generate: --steer-strength NaN: not a finite number (see 'stepthrough generate -h')\n"},
		{"steer strength Inf", append(slices.Clone(steer), "--steer-strength", "-Inf"),
			"stepthrough generate: --steer-strength -Inf: not a finite number (see 'stepthrough generate -h')\n"},
		{"steer strength 1e308", append(slices.Clone(steer), "--steer-strength", "1e308"),
			`stepthrough generate: intervention: --steer-strength 1e+308: the strength is a number from -1000 to 1000 (see 'stepthrough generate -h')` + "\n"},
		{"logits steer strength NaN", []string{"logits", "--model", m, "--prompt", "x", "--lens", "--steer-layer", "1", "--steer-toward", "a", "--steer-away", "b", "--steer-strength", "nan"},
			"stepthrough logits: --steer-strength NaN: not a finite number (see 'stepthrough logits -h')\n"},
		{"temperature 1e308", append(slices.Clone(gen), "--temperature", "1e308"),
			"stepthrough generate: invalid temperature 1e+308: must be 0 or in [0.001, 100] (0 means greedy) (see 'stepthrough generate -h')\n"},
		{"top-p Inf", append(slices.Clone(gen), "--top-p", "Inf"),
			"stepthrough generate: invalid top-p Inf: not a number (see 'stepthrough generate -h')\n"},
		{"repeat penalty 1e308", append(slices.Clone(gen), "--repeat-penalty", "1e308"),
			"stepthrough generate: invalid repeat-penalty 1e+308: must be in [0.01, 100] (1 is off) (see 'stepthrough generate -h')\n"},
		{"presence penalty -1e308", append(slices.Clone(gen), "--presence-penalty", "-1e308"),
			"stepthrough generate: invalid presence-penalty -1e+308: must be in [-100, 100] (0 is off) (see 'stepthrough generate -h')\n"},
		{"heads threshold NaN", []string{"heads", "--model", m, "--threshold", "NaN"},
			"stepthrough heads: --threshold NaN: not a finite number (see 'stepthrough heads -h')\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := run(t, tt.args...)
			if diff := cmp.Diff(tt.want, errOut); diff != "" || code != 2 {
				t.Errorf("exit %d (want 2); stderr (-want +got):\n%s", code, diff)
			}
		})
	}
}

// --patch is L, the layer, @ and a position within the prompt and
// --patch-from, nothing more; anything else is refused naming why.
func TestPatchFlag(t *testing.T) {
	m := stories(t)
	const hint = " (write L3@5: the layer and the prompt position, from 1)"
	for _, tt := range []struct {
		name, patch, from, want string
	}{
		{"past the prompt", "L2@20", "Once upon a time there was", "intervention: --patch L2@20: position 20 is past the prompt, which has 3 tokens"},
		{"past --patch-from", "L2@3", "a", "intervention: --patch L2@3: position 3 is past --patch-from, which has 2 tokens"},
		{"trailing junk", "L1@1junk", "a", `intervention: --patch "L1@1junk": the layer and the position are whole numbers from 1, with nothing after them` + hint},
		{"leading zero", "L1@01", "a", `intervention: --patch "L1@01": the layer and the position are whole numbers from 1, with nothing after them` + hint},
		{"position 0", "L1@0", "a", `intervention: --patch "L1@0": the layer and the position are whole numbers from 1, with nothing after them` + hint},
		{"no layer", "L@1", "a", `intervention: --patch "L@1": the layer and the position are whole numbers from 1, with nothing after them` + hint},
		{"no L", "1@1", "a", `intervention: --patch "1@1": it is L, the layer, @ and the position` + hint},
		{"no position", "L1", "a", `intervention: --patch "L1": it is L, the layer, @ and the position` + hint},
		{"past the layers", "L6@1", "a", `intervention: --patch "L6@1": the model has layers 1 to 5` + hint},
		{"fits", "L2@3", "Once upon a time", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := run(t, "generate", "--model", m, "--prompt", "Once upon", "-n", "1", "--patch", tt.patch, "--patch-from", tt.from)
			want, wantCode := "seed: ", 0
			if tt.want != "" {
				want, wantCode = "stepthrough generate: "+tt.want+" (see 'stepthrough generate -h')\n", 2
			}
			if diff := cmp.Diff(want, errOut[:min(len(errOut), len(want))]); diff != "" || code != wantCode {
				t.Errorf("exit %d (want %d); stderr (-want +got):\n%s", code, wantCode, diff)
			}
		})
	}
}

// generate refuses a run past the context before its interventions'
// passes: a mean-over or steering text that is itself too long is not
// read first.
func TestGenerateChecksContextFirst(t *testing.T) {
	m := stories(t)
	long := strings.Repeat("zq ", 1200) // 3601 tokens (3602 with the BOS), past the 2048 positions
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"mean-over text and -n past the context", []string{"-n", "5000", "--ablate", "L1H1", "--mean-over", long},
			"stepthrough generate: generate: 3 prompt tokens and 5000 new ones exceed the context of 2048 positions\n"},
		{"steering text and -n past the context", []string{"-n", "5000", "--steer-layer", "1", "--steer-toward", long, "--steer-away", "b"},
			"stepthrough generate: generate: 3 prompt tokens and 5000 new ones exceed the context of 2048 positions\n"},
		{"mean-over text alone past the context", []string{"-n", "4", "--ablate", "L1H1", "--mean-over", long},
			"stepthrough generate: mean ablation: a reference text of 3602 tokens (at most 2048 here) (see 'stepthrough generate -h')\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := run(t, append([]string{"generate", "--model", m, "--prompt", "Once upon"}, tt.args...)...)
			if diff := cmp.Diff(tt.want, errOut); diff != "" || code == 0 {
				t.Errorf("exit %d; stderr (-want +got):\n%s", code, diff)
			}
		})
	}
}

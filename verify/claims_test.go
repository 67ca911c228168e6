package verify

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine"
	"stepthrough/engine/intervene"
	"stepthrough/lessons"
	"stepthrough/models/modelstest"
	"stepthrough/registry"
	"stepthrough/session"
)

// Every claim a built-in lesson declares holds on the embedded lesson
// model, played as the Explorer plays it: a retrain that changes a fact a
// lesson states fails here.
func TestBuiltinLessonClaims(t *testing.T) {
	reg := modelstest.Lesson(t)
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, name := range lessons.Names(all) {
		se := session.New("claims", "test", reg)
		for _, r := range Lesson(context.Background(), se, all[name]) {
			total++
			if r.Err != nil {
				t.Errorf("%s:%d (step %d) expect %s: %v", all[name].File, r.Claim.Line, r.Step+1, r.Claim, r.Err)
			}
		}
		se.Close()
	}
	if total < 30 {
		t.Errorf("only %d claims across the built-in lessons", total)
	}
}

var (
	quotedToken = regexp.MustCompile(`"( [^"\s]+|<[^"\s]+>)"`)
	number      = regexp.MustCompile(`\b\d+(\.\d+)?\b`)
)

// A built-in lesson's narration and instructor notes name a token or a
// number only when a claim of the same lesson (or a setting of that step)
// states it, so every such fact is one the claims test checks, or when
// the step's cited source (a source: line) states it: a fact about
// inference in general.
func TestBuiltinNarrationIsClaimed(t *testing.T) {
	all, err := lessons.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range lessons.Names(all) {
		l := all[name]
		var claimed []string
		for _, st := range l.Steps {
			for _, c := range st.Claims {
				claimed = append(claimed, c.Text, c.String())
			}
			claimed = append(claimed, st.Highlight...)
		}
		stated := func(s string) bool {
			for _, c := range claimed {
				if strings.Contains(c, s) {
					return true
				}
			}
			return false
		}
		for i, st := range l.Steps {
			settings := st.Run.Query().Encode() + " " + st.Run.Prompt + " " + strings.Join(st.Sources, " ")
			text := st.Narration + "\n" + st.After + "\n" + st.Notes
			for _, q := range quotedToken.FindAllStringSubmatch(text, -1) {
				if !stated(q[1]) {
					t.Errorf("%s step %d: the narration or a note names %q, which no claim states", l.File, i+1, q[1])
				}
			}
			for _, n := range number.FindAllString(text, -1) {
				if !stated(n) && !strings.Contains(settings, n) {
					t.Errorf("%s step %d: the narration or a note states the number %s, which no claim or setting of the step states", l.File, i+1, n)
				}
			}
		}
	}
}

// The serving claims fail when the fact is wrong: a stop string over the
// wrong number of tokens or absent, a cache size, a cost, a batched run
// that is not the step's plain run.
func TestServingClaimsCanFail(t *testing.T) {
	reg := modelstest.Lesson(t)
	src := `---
title: wrong on purpose
model: lesson.gguf
---

## Step
prompt: "Once upon a time"
temperature: 0
seed: 1
max_tokens: 60
stage: kv
expect: stop ". The end" 2
expect: stop "a purple elephant" 1
expect: kvbytes 1280
expect: kvbytes "Llama 2 70B" 524288
expect: cost 2 1000 0.50
expect: batched 4
expect: context 256
expect: blocks 16 9
expect: shares 4 0
A step.

## With tools
tools: calc
expect: batched 4
Another.
`
	l, err := lessons.Parse("wrong.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	se := session.New("claims", "test", reg)
	defer se.Close()
	fails := map[string]bool{}
	for _, r := range Lesson(context.Background(), se, l) {
		fails[fmt.Sprintf("%d %s", r.Step, r.Claim)] = r.Err != nil
	}
	for claim, want := range map[string]bool{`0 stop ". The end" 2`: true, `0 stop "a purple elephant" 1`: true, "0 kvbytes 1280": true,
		`0 kvbytes "Llama 2 70B" 524288`: true, "0 cost 2 1000 0.5": true, "0 batched 4": false,
		"0 context 256": true, "0 blocks 16 9": true, "0 shares 4 0": true, "1 batched 4": true} {
		if got, ok := fails[claim]; !ok || got != want {
			t.Errorf("%s: failed %v (checked: %v), want failed %v", claim, got, ok, want)
		}
	}
}

// The mechanism claims are decided on the engine: a bound just past the
// measured value fails and one just short of it holds (the head score and
// the copying rate measured here the engine's way, the latter with the
// step's ablation), and patching the last layer at the last position
// restores all of the clean answer's lead while the shared first position
// restores none.
func TestMechanismClaimsCanFail(t *testing.T) {
	reg := modelstest.Lesson(t)
	lm, seqs := repeatedOn(t, reg, "lesson.gguf")
	ctx := context.Background()
	hs, err := lm.ScoreHeads(ctx, seqs)
	if err != nil {
		t.Fatal(err)
	}
	score := hs.Induction[3][0]
	off, _ := intervene.Parse("L4H1")
	hits, total, err := lm.CopyCount(ctx, seqs, off)
	if err != nil {
		t.Fatal(err)
	}
	copying := float64(hits) / float64(total)
	tk := lm.Model.Tokenizer
	n := len(tk.EncodeIDs("The capital of France is", true))
	corrupt := ""
	for _, c := range []string{"Spain", "Italy", "Japan", "Peru", "Chile", "Germany", "Egypt", "Kenya"} {
		if p := "The capital of " + c + " is"; len(tk.EncodeIDs(p, true)) == n {
			corrupt = p
			break
		}
	}
	if corrupt == "" {
		t.Fatal("no country's prompt is as many tokens as France's")
	}
	src := fmt.Sprintf(`---
title: mechanisms, right and wrong
model: lesson.gguf
---

## Step
prompt: "The capital of France is"
temperature: 0
ablate: L4H1
expect: induction L4H1 > %.4f
expect: induction L4H1 < %.4f
expect: copying > %.4f
expect: copying < %.4f
expect: restores 4 %d %q > 0.999
expect: restores 1 0 %q > 0.5
A step.
`, score-0.001, score-0.001, max(copying-0.001, 0), max(copying-0.001, 0), n-1, corrupt, corrupt)
	l, err := lessons.Parse("mechanisms.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	se := session.New("claims", "test", reg)
	defer se.Close()
	var fails []bool
	for _, r := range Lesson(ctx, se, l) {
		fails = append(fails, r.Err != nil)
		t.Logf("%s: %s (%v)", r.Claim, r.Got, r.Err)
	}
	if diff := cmp.Diff([]bool{false, true, copying == 0, true, false, true}, fails); diff != "" {
		t.Errorf("which claims failed (-want +got):\n%s", diff)
	}
}

// The family claims hold where the model has the architecture and the
// differences claimed, and fail where it does not, naming what it has.
func TestShapeClaimsCanFail(t *testing.T) {
	src := `---
title: shapes, right and wrong
model: lesson.gguf
---

## Step
prompt: "The capital of France is"
expect: arch gpt2
expect: arch qwen3
expect: feature learned-positions
expect: feature qk-norm
expect: lacks qk-norm
expect: lacks layernorm
A step.
`
	l, err := lessons.Parse("shapes.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	se := session.New("claims", "test", modelstest.Lesson(t))
	defer se.Close()
	var fails []bool
	for _, r := range Lesson(context.Background(), se, l) {
		fails = append(fails, r.Err != nil)
		t.Logf("%s: %s (%v)", r.Claim, r.Got, r.Err)
	}
	if diff := cmp.Diff([]bool{false, true, false, true, false, true}, fails); diff != "" {
		t.Errorf("which claims failed (-want +got):\n%s", diff)
	}
}

// The claims about a conversion, timing, a context's cache and the
// training text hold where the fact is so and fail where it is not: a
// count or a type the file does not hold, a name no tensor has, a KL
// bound past the measured one, a model that is no conversion, a prefill
// far cheaper than measured, another cache size, a text the corpus has.
func TestQualityClaimsCanFail(t *testing.T) {
	src := `---
title: conversions, right and wrong
model: lesson.gguf
---

## Four bits
prompt: "Once upon a time"
model: lesson.gguf@Q4_0
expect: holds Q4_0 17
expect: holds Q4_0 18
expect: holds Q8_0 token_embd
expect: holds Q4_0 token_embd
expect: holds Q4_0 no_such_tensor
expect: kl > 0.03
expect: kl < 0.03
expect: prefill > 0.001
expect: prefill < 0.001
expect: kvcontext "Llama 2 70B" 4096 1.34
expect: kvcontext "Llama 2 70B" 4096 1.35
expect: unseen "Zorvik"
expect: unseen "Reykjavik"
A step.

## As stored
model: lesson.gguf
expect: kl < 0.5
Another.
`
	l, err := lessons.Parse("quality.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	se := session.New("claims", "test", modelstest.Lesson(t))
	defer se.Close()
	var fails []bool
	for _, r := range Lesson(context.Background(), se, l) {
		fails = append(fails, r.Err != nil)
		t.Logf("%s: %s (%v)", r.Claim, r.Got, r.Err)
	}
	if diff := cmp.Diff([]bool{false, true, false, true, true, false, true, false, true, false, true, false, true, true}, fails); diff != "" {
		t.Errorf("which claims failed (-want +got):\n%s", diff)
	}
}

// A copying claim measures the step's interventions as the Explorer
// applies them: a mean ablation over its reference text and a steering
// count, not only the heads switched off (the rate here measured the
// engine's way, with the same edits made by hand, on the copying model).
func TestCopyingClaimReadsMeanAndSteer(t *testing.T) {
	reg := modelstest.Lesson(t)
	lm, seqs := repeatedOn(t, reg, "lesson-v3.gguf")
	ctx := context.Background()
	off, _ := intervene.Parse("L1H1")
	const text = "Once upon a time there was a little cat."
	s, err := lm.NewSession(0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mean, err := s.MeanOver(ctx, text, off)
	if err != nil {
		t.Fatal(err)
	}
	steer, err := s.SteerEdit(ctx, intervene.Steer{Layer: 1, Toward: "happy", Away: "sad", Strength: 4})
	if err != nil {
		t.Fatal(err)
	}
	rate := func(edits *intervene.Set) string {
		hits, total, err := lm.CopyCount(ctx, seqs, edits)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%.3f", float64(hits)/float64(total))
	}
	cases := []struct {
		name, settings string
		edits          *intervene.Set
	}{
		{"zeroed", "ablate: L1H1", off},
		{"mean-ablated", "ablate: L1H1\nmean_over: " + text, mean},
		{"steered", "steer: L2:happy|sad*4", (*intervene.Set)(nil).Plus(steer)},
	}
	se := session.New("claims", "test", reg)
	defer se.Close()
	got := map[string]string{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "---\ntitle: copying\nmodel: lesson-v3.gguf\n---\n\n## Step\nprompt: \"The capital of France is\"\ntemperature: 0\n" + c.settings + "\nexpect: copying > 0\nA step.\n"
			l, err := lessons.Parse("copying.md", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			res := Lesson(ctx, se, l)
			if len(res) != 1 {
				t.Fatalf("%d results, want 1", len(res))
			}
			got[c.name] = res[0].Got
			if diff := cmp.Diff(rate(c.edits), res[0].Got); diff != "" {
				t.Errorf("copying rate (-engine +claim):\n%s", diff)
			}
		})
	}
	if got["zeroed"] == got["mean-ablated"] || got["zeroed"] == got["steered"] {
		t.Errorf("rates %v: the mean ablation or the steering gives the zeroed head's, so the test cannot tell them apart", got)
	}
}

// repeatedOn is the lesson model name on the CPU and the repeated
// sequences the mechanism claims read.
func repeatedOn(t *testing.T, reg *registry.Registry, name string) (*engine.Loaded, [][]int32) {
	t.Helper()
	lm, err := reg.Engine(name, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := engine.RepeatedRandom(lm.Model.Tokenizer, lm.Model.Config.Vocab, HeadSeqLen, HeadSeqs, HeadSeed)
	if err != nil {
		t.Fatal(err)
	}
	return lm, seqs
}

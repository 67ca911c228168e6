package compare

import (
	"context"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine"
	"stepthrough/engine/intervene"
	"stepthrough/engine/model"
	"stepthrough/engine/reftest"
	"stepthrough/engine/sample"
	"stepthrough/engine/vulkan"
)

func stories(t *testing.T) *model.Model {
	m, err := model.Load(reftest.Path(t, "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// load prepares m once on a backend for the test's sessions.
func load(t *testing.T, m *model.Model, backend string) *engine.Loaded {
	t.Helper()
	lm, err := engine.Load(m, engine.Options{Threads: 2, Backend: backend, Context: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lm.Close)
	return lm
}

func lanes(t *testing.T, specs ...string) []Strategy {
	var out []Strategy
	seed := uint64(7)
	for _, s := range specs {
		st, err := ParseLane(s, &seed)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, st)
	}
	return out
}

func TestParseLane(t *testing.T) {
	for spec, want := range map[string]string{
		"greedy": "greedy", "beam=4": "beam", "temperature=0.7,top-p=0.9,seed=1": "sample",
		"temperature=0": "greedy", "beam=2,length-penalty=1.2": "beam", "temperature=1,order=transformers": "sample",
		"top-k=5,order=penalties>top-k>temperature": "sample",
	} {
		st, err := ParseLane(spec, nil)
		if err != nil || st.Kind != want {
			t.Errorf("%q: %+v %v", spec, st.Kind, err)
		}
	}
	for _, bad := range []string{"beam=1", "beam=9", "temperature=-1", "top-p=2", "nonsense", "colour=red", "seed=x", "order=top-z"} {
		if _, err := ParseLane(bad, nil); err == nil {
			t.Errorf("%q: want error", bad)
		}
	}
}

// Lanes continue from a copy of the shared prefill: their logits are
// bit-identical to independent runs; identical lanes never diverge; the
// greedy lane is the engine's greedy text.
func TestLanes(t *testing.T) {
	m := stories(t)
	prompt := m.Tokenizer.EncodeIDs("Once upon a time", true)
	ctx := context.Background()
	res, err := Run(ctx, load(t, m, "cpu"), prompt, lanes(t, "greedy", "greedy", "temperature=1.2,top-k=0,top-p=1,min-p=0,seed=3", "beam=3"), Options{N: 12})
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338}
	if !slices.Equal(res.Lanes[0].Tokens, want) || !slices.Equal(res.Lanes[1].Tokens, want) {
		t.Errorf("greedy lanes %v / %v, want %v", res.Lanes[0].Tokens, res.Lanes[1].Tokens, want)
	}
	if d := divergence(res.Lanes[:2]); d != -1 {
		t.Errorf("identical lanes diverge at %d", d)
	}
	if res.Divergence < 0 {
		t.Errorf("greedy and sampling at T=1.2 never diverge: %v / %v", res.Lanes[0].Tokens, res.Lanes[2].Tokens)
	}
	// the sampling lane's tokens equal an independent run with the same seed
	r, _ := engine.NewSession(m, engine.Options{Threads: 2, Context: 64})
	defer r.Close()
	smp, _ := sample.New(res.Lanes[2].Strategy.Params)
	smp.Accept(prompt...)
	logits, _ := r.Eval(ctx, prompt)
	for i, tok := range res.Lanes[2].Tokens {
		if id := smp.Sample(logits, nil); id != tok {
			t.Fatalf("step %d: lane %d, independent run %d", i, tok, id)
		}
		if math.Abs(sample.LogSoftmax(logits)[tok]-res.Lanes[2].Steps[i].LogProb) != 0 {
			t.Fatalf("step %d: log-prob differs from an independent run", i)
		}
		smp.Accept(tok)
		logits, _ = r.Eval(ctx, []int32{tok})
	}
	beam := res.Lanes[3]
	if beam.Beam == nil || len(beam.Beam.Steps) == 0 || beam.Beam.Why == "" {
		t.Fatalf("beam lane %+v", beam.Beam)
	}
	var greedyLP, beamLP float64
	for _, s := range res.Lanes[0].Steps {
		greedyLP += s.LogProb
	}
	for _, s := range beam.Steps {
		beamLP += s.LogProb
	}
	if len(beam.Tokens) == len(want) && beamLP < greedyLP-1e-9 {
		t.Errorf("beam (width 3) log-prob %g below greedy %g", beamLP, greedyLP)
	}
	if math.Abs(beamLP-beam.Beam.Best.LogProb) > 1e-6 {
		t.Errorf("beam scoring pass %g != search %g", beamLP, beam.Beam.Best.LogProb)
	}
	for _, l := range res.Lanes {
		mt := l.Metrics
		if mt.Tokens != len(l.Tokens) || !(mt.Perplexity >= 1) || mt.Distinct1 <= 0 || mt.Distinct1 > 1 || mt.Stop == "" {
			t.Errorf("lane %s metrics %+v", l.Strategy.Spec, mt)
		}
	}
	// timings are measured, not asserted (the machine is shared): only
	// check they were taken
	if !(res.PrefillMS > 0 && res.SeparatePrefillMS > 0 && res.CopyMS > 0) {
		t.Errorf("prefill %.3f ms once, %.3f ms separately, copies %.3f ms", res.PrefillMS, res.SeparatePrefillMS, res.CopyMS)
	}
}

func TestDistinct(t *testing.T) {
	d1, rep := distinct([]int32{1, 2, 1, 2, 1, 2}, 1)
	if d1 != 2.0/6 || rep != 4 {
		t.Errorf("distinct-1 %g repeats %d", d1, rep)
	}
	_, rep3 := distinct([]int32{1, 2, 3, 1, 2, 3, 1}, 3)
	if rep3 != 2 {
		t.Errorf("repeated trigrams %d", rep3)
	}
}

func TestForcedBranch(t *testing.T) {
	m := stories(t)
	prompt := m.Tokenizer.EncodeIDs("Once upon a time", true)
	res, err := Run(context.Background(), load(t, m, "cpu"), prompt, lanes(t, "greedy", "greedy,force=432>322"), Options{N: 6})
	if err != nil {
		t.Fatal(err)
	}
	b := res.Lanes[1]
	if b.Tokens[0] != 432 || b.Tokens[1] != 322 || !b.Steps[1].Forced || b.Steps[2].Forced || res.Divergence != 1 {
		t.Errorf("branch %v (divergence %d)", b.Tokens, res.Divergence)
	}
}

// Compare goes through the engine's front door, so its lanes run on Vulkan
// too (lavapipe in CI): the same greedy text, the same beam choice and
// log-probabilities within the Vulkan parity bound.
func TestLanesOnVulkan(t *testing.T) {
	m := stories(t)
	t.Setenv("STEPTHROUGH_VK_VALIDATION", "1")
	lm := load(t, m, "vulkan")
	if lm.Backend().Name != "vulkan" {
		if os.Getenv("REQUIRE_VULKAN") == "1" {
			t.Fatalf("REQUIRE_VULKAN=1: %s", lm.Backend().Note)
		}
		t.Skipf("no Vulkan: %s", lm.Backend().Note)
	}
	prompt := m.Tokenizer.EncodeIDs("Once upon a time", true)
	specs := lanes(t, "greedy", "beam=3", "greedy,force=432>322", "greedy,spec=self:2,k=3")
	ctx := context.Background()
	gpu, err := Run(ctx, lm, prompt, specs, Options{N: 8, Draft: draftsOn(t, m, "vulkan")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gpu.Lanes[3].Tokens, gpu.Lanes[0].Tokens) {
		t.Errorf("speculative lane on Vulkan %v, greedy %v", gpu.Lanes[3].Tokens, gpu.Lanes[0].Tokens)
	}
	cpu, err := Run(ctx, load(t, m, "cpu"), prompt, specs, Options{N: 8, Draft: draftsOn(t, m, "cpu")})
	if err != nil {
		t.Fatal(err)
	}
	if n, first := vulkan.ValidationErrors(); n > 0 {
		t.Errorf("validation layer reported %d errors; first: %s", n, first)
	}
	for i := range specs {
		g, c := gpu.Lanes[i], cpu.Lanes[i]
		if !slices.Equal(g.Tokens, c.Tokens) {
			t.Errorf("lane %s: vulkan %v, cpu %v", specs[i].Spec, g.Tokens, c.Tokens)
			continue
		}
		for j := range g.Steps {
			if d := math.Abs(g.Steps[j].LogProb - c.Steps[j].LogProb); d > 1e-3 {
				t.Errorf("lane %s step %d: log-prob differs by %g", specs[i].Spec, j, d)
			}
		}
	}
}

// An ablated lane runs the model with its edits from the prompt on: its
// tokens are a greedy generation of the edited model, beside the intact
// greedy lane; bad or unsupported ablations are refused.
func TestAblatedLane(t *testing.T) {
	m := stories(t)
	lm := load(t, m, "cpu")
	prompt := m.Tokenizer.EncodeIDs("Once upon a time", true)
	res, err := Run(context.Background(), lm, prompt, lanes(t, "greedy", "greedy,ablate=L1mlp;L2mlp"), Options{N: 12})
	if err != nil {
		t.Fatal(err)
	}
	s, err := lm.NewSession(64)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	set, _ := intervene.Parse("L1mlp;L2mlp")
	want := greedyWith(t, s, set, prompt, 12)
	if got := res.Lanes[1].Tokens; !slices.Equal(got, want) {
		t.Errorf("ablated lane %v, the edited model's greedy tokens %v", got, want)
	}
	if slices.Equal(res.Lanes[0].Tokens, res.Lanes[1].Tokens) {
		t.Error("switching layer 2's MLP off changed nothing in 12 tokens")
	}
	if res.Lanes[1].Strategy.Ablate != "L1mlp;L2mlp" {
		t.Errorf("lane ablate %q", res.Lanes[1].Strategy.Ablate)
	}
	for _, bad := range []string{"greedy,ablate=L0H1", "beam=2,ablate=L1H1", "spec=self:1,ablate=L1H1"} {
		if _, err := ParseLane(bad, nil); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// A steered lane adds its direction from the prompt on: at strength 0 it
// is the intact greedy lane to the bit; at strength 8 it is a greedy
// generation of the model with that edit; bad steerings are refused.
func TestSteeredLane(t *testing.T) {
	m := stories(t)
	lm := load(t, m, "cpu")
	prompt := m.Tokenizer.EncodeIDs("Once upon a time", true)
	res, err := Run(context.Background(), lm, prompt, lanes(t, "greedy", "greedy,steer=L2:happy|sad*0", "greedy,steer=L2:happy|sad*8"), Options{N: 12})
	if err != nil {
		t.Fatal(err)
	}
	intact, zero, steered := res.Lanes[0], res.Lanes[1], res.Lanes[2]
	if diff := cmp.Diff(intact.Steps, zero.Steps); diff != "" {
		t.Errorf("a zero-strength steer changed the lane (-intact +steered):\n%s", diff)
	}
	s, err := lm.NewSession(64)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, err := s.SteerEdit(context.Background(), intervene.Steer{Layer: 1, Toward: "happy", Away: "sad", Strength: 8})
	if err != nil {
		t.Fatal(err)
	}
	want := greedyWith(t, s, (*intervene.Set)(nil).Plus(e), prompt, 12)
	if !slices.Equal(steered.Tokens, want) {
		t.Errorf("steered lane %v, the steered model's greedy tokens %v", steered.Tokens, want)
	}
	if slices.Equal(intact.Tokens, steered.Tokens) {
		t.Error("steering at strength 8 changed nothing in 12 tokens")
	}
	if steered.Strategy.Steer != "L2:happy|sad*8" {
		t.Errorf("lane steer %q", steered.Strategy.Steer)
	}
	for _, bad := range []string{"greedy,steer=L0:a|b*1", "greedy,steer=L2:happy*4", "beam=2,steer=L1:a|b*1", "spec=self:1,steer=L1:a|b*1"} {
		if _, err := ParseLane(bad, nil); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := Run(context.Background(), lm, prompt, lanes(t, "greedy", "greedy,steer=L99:a|b*1"), Options{N: 2}); err == nil || !strings.Contains(err.Error(), "layers 1 to") {
		t.Errorf("steering past the last layer: %v", err)
	}
}

// A lane with mean=TEXT switches its heads off to their mean over TEXT:
// it is the greedy generation of the model with that mean ablation, and
// its log-probabilities differ from the zeroed lane's; mean without a
// head switched off is refused.
func TestMeanAblatedLane(t *testing.T) {
	m := stories(t)
	lm := load(t, m, "cpu")
	prompt := m.Tokenizer.EncodeIDs("Once upon a time", true)
	res, err := Run(context.Background(), lm, prompt, lanes(t, "greedy,ablate=L2H1", "greedy,ablate=L2H1,mean=The cat sat on the mat."), Options{N: 12})
	if err != nil {
		t.Fatal(err)
	}
	zeroed, mean := res.Lanes[0], res.Lanes[1]
	s, err := lm.NewSession(64)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	off, _ := intervene.Parse("L2H1")
	set, err := s.MeanOver(context.Background(), "The cat sat on the mat.", off)
	if err != nil {
		t.Fatal(err)
	}
	want := greedyWith(t, s, set, prompt, 12)
	if !slices.Equal(mean.Tokens, want) {
		t.Errorf("mean-ablated lane %v, the model's greedy tokens with the mean ablation %v", mean.Tokens, want)
	}
	if cmp.Equal(zeroed.Steps, mean.Steps) {
		t.Error("the mean-ablated lane is the zeroed lane")
	}
	for _, bad := range []string{"greedy,mean=a", "greedy,ablate=L1H1,mean=", "greedy,ablate=L1mlp,mean=a", "greedy,ablate=L1H1*0.5,mean=a"} {
		if _, err := ParseLane(bad, nil); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// Every lane's speed is timed Rounds times, the lanes taking turns; the
// speed shown is the median, with the range, and an unseeded sampling
// lane reruns with the seed it drew (the same tokens each time).
func TestLaneSpeedsRepeated(t *testing.T) {
	m := stories(t)
	prompt := m.Tokenizer.EncodeIDs("Once upon a time", true)
	res, err := Run(context.Background(), load(t, m, "cpu"), prompt, lanes(t, "greedy", "temperature=1.2,top-k=0,top-p=1,min-p=0", "beam=2"), Options{N: 10, Rounds: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range res.Lanes {
		if len(l.Speeds) != 3 {
			t.Fatalf("lane %d: %d speeds, want 3", i, len(l.Speeds))
		}
		s := slices.Clone(l.Speeds)
		slices.Sort(s)
		if l.TokensPerSec != s[1] || s[0] <= 0 {
			t.Errorf("lane %d: speed %g, runs %v: want the median", i, l.TokensPerSec, l.Speeds)
		}
		if got := l.Speed(); !strings.Contains(got, "3 runs") || !strings.Contains(got, "–") {
			t.Errorf("lane %d: %q shows no spread", i, got)
		}
	}
	if res.MeasuredAt.IsZero() {
		t.Error("no measurement time")
	}
	if _, err := Run(context.Background(), load(t, m, "cpu"), prompt, lanes(t, "greedy"), Options{N: 4, Rounds: 10}); err == nil {
		t.Error("10 rounds accepted")
	}
}

// greedyWith is s's greedy generation of n tokens after prompt with
// edits applied.
func greedyWith(t *testing.T, s *engine.Session, edits *intervene.Set, prompt []int32, n int) []int32 {
	t.Helper()
	if err := s.SetEdits(edits); err != nil {
		t.Fatal(err)
	}
	var out []int32
	if err := s.Greedy(context.Background(), prompt, n, func(id int32) error { out = append(out, id); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

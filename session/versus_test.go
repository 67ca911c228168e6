package session

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"stepthrough/engine/quantlens"
	"stepthrough/engine/trace"
	"stepthrough/models/modelstest"
	"stepthrough/spec"
)

func getter(m map[string]string) spec.Getter {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// The comparison's pass is the converted model's own, with the run's
// interventions: at the prompt's step it records exactly what a run of
// NAME@TYPE with them records, stage by stage; at a later step, reached
// by stepping (its cache reused) or opened directly (read from the
// start), the same values.
func TestVersusIsTheConvertedModelsPass(t *testing.T) {
	for _, ablate := range []string{"", "L2H1"} {
		t.Run("ablate="+ablate, func(t *testing.T) { versusIsTheConvertedModelsPass(t, ablate) })
	}
}

func versusIsTheConvertedModelsPass(t *testing.T, ablate string) {
	ctx := context.Background()
	eng := modelstest.Lesson(t)
	r := run("Once upon a time, there was")
	r.Sampler.Temperature, r.MaxTokens = 0, 4
	if err := r.SetInterventions(ablate, "", ""); err != nil {
		t.Fatal(err)
	}
	r.View.Vs = "Q4_0"
	se := New("v", "", eng)
	defer se.Close()
	if err := se.Open(ctx, r); err != nil {
		t.Fatal(err)
	}
	v := se.Snapshot().Versus
	if v == nil || v.Type != "Q4_0" || v.Model != "lesson.gguf@Q4_0" {
		t.Fatalf("versus %+v", v)
	}
	direct := New("d", "", eng)
	defer direct.Close()
	rd := r
	rd.Model, rd.View.Vs = "lesson.gguf@Q4_0", ""
	if err := direct.Open(ctx, rd); err != nil {
		t.Fatal(err)
	}
	want := direct.Snapshot().Cursor.Steps[0]
	if diff := cmp.Diff(passOf(want), passOf(v.Step)); diff != "" {
		t.Errorf("the prompt's pass under Q4_0 differs from a run of lesson.gguf@Q4_0 (-run +versus):\n%s", diff)
	}
	if diff := cmp.Diff(stagesBut(trace.Stages(se.Snapshot().Cursor.Steps[0])), trace.Stages(v.Step)); diff != "" {
		t.Errorf("stages differ (-run +versus):\n%s", diff)
	}

	for range 3 {
		if err := se.Act(ctx, ActionNextToken, nil); err != nil {
			t.Fatal(err)
		}
	}
	stepped := se.Snapshot().Versus
	opened := New("o", "", eng)
	defer opened.Close()
	if err := opened.Open(ctx, se.Spec()); err != nil {
		t.Fatal(err)
	}
	fresh := opened.Snapshot().Versus
	if stepped == nil || fresh == nil {
		t.Fatalf("no comparison at token step 4: stepped %v, opened %v", stepped, fresh)
	}
	if stepped.Step.N != 1 || len(stepped.Step.Layers) == 0 {
		t.Fatalf("token step 4's pass reads %d positions", stepped.Step.N)
	}
	if diff := cmp.Diff(passOf(fresh.Step), passOf(stepped.Step)); diff != "" {
		t.Errorf("token step 4 under Q4_0: stepped there and opened there differ (-opened +stepped):\n%s", diff)
	}
}

// passOf is what a pass computed, without its timings and its logit lens
// (the comparison records none).
func passOf(st *trace.Step) any {
	var layers []trace.Layer
	for _, l := range st.Layers {
		c := *l
		c.Lens = nil
		layers = append(layers, c)
	}
	return struct {
		Embed  *trace.Embed
		Layers []trace.Layer
		Logits *trace.Logits
	}{st.Embed, layers, st.Logits}
}

// stagesBut is a step's stages up to its logits: what a pass records
// without the sampler after it.
func stagesBut(all []trace.Stage) []trace.Stage {
	var out []trace.Stage
	for _, x := range all {
		switch x.Name {
		case trace.StageTokenize, trace.StageSampler, trace.StageSample:
			continue
		}
		out = append(out, x)
	}
	return out
}

// A type the model cannot be converted to, or a malformed one, is
// refused and the view stays; "none" stops comparing; a speculative run
// refuses one.
func TestVsRefusals(t *testing.T) {
	ctx := context.Background()
	se := New("v", "", modelstest.Lesson(t))
	defer se.Close()
	if err := se.Run(ctx, run("Once upon a time")); err != nil {
		t.Fatal(err)
	}
	if err := se.Act(ctx, ActionVs, getter(map[string]string{"vs": "q8_0"})); err != nil {
		t.Fatal(err)
	}
	if v := se.Snapshot().Versus; v == nil || v.Type != "Q8_0" {
		t.Fatalf("after vs=q8_0: %+v", v)
	}
	var pe *spec.Error
	if err := se.Act(ctx, ActionVs, getter(map[string]string{"vs": "Q8_0<b>"})); !errors.As(err, &pe) || pe.Param != "vs" {
		t.Errorf("a malformed type: %v", err)
	}
	var e *Error
	if err := se.Act(ctx, ActionVs, getter(map[string]string{"vs": "Q9_9"})); !errors.As(err, &e) {
		t.Errorf("an unknown type: %v", err)
	}
	if sn := se.Snapshot(); sn.Versus == nil || sn.Versus.Type != "Q8_0" || sn.Spec.View.Vs != "Q8_0" {
		t.Errorf("a refused type changed the view: %+v", sn.Spec.View)
	}
	if err := se.Act(ctx, ActionVs, getter(map[string]string{"vs": "none"})); err != nil {
		t.Fatal(err)
	}
	if sn := se.Snapshot(); sn.Versus != nil || sn.Spec.View.Vs != "" {
		t.Errorf("vs=none: %+v", sn.Spec.View)
	}
	r := run("Once upon a time")
	r.Draft, r.DraftK, r.View.Vs = "self:1", 2, "Q8_0"
	if err := se.Run(ctx, r); !errors.As(err, &pe) || pe.Param != "vs" {
		t.Errorf("a speculative run compared with a type: %v", err)
	}
}

// The type compared with is the viewer's choice: chosen before a run it
// applies to the run; it holds through another run and a reset; a
// speculative run drops it.
func TestVsHoldsAcrossRuns(t *testing.T) {
	ctx := context.Background()
	se := New("v", "", modelstest.Lesson(t))
	defer se.Close()
	form := map[string]string{"prompt": "Once upon a time", "backend": "cpu"}
	for _, a := range []struct {
		action string
		get    map[string]string
		want   string
	}{
		{ActionVs, map[string]string{"vs": "Q8_0"}, ""}, // no run yet: nothing to compare
		{ActionRun, form, "Q8_0"},
		{ActionNextToken, nil, "Q8_0"},
		{ActionRun, form, "Q8_0"},
		{ActionReset, nil, ""},
		{ActionRun, form, "Q8_0"},
		{ActionRun, map[string]string{"prompt": "Once upon a time", "draft": "self:1", "draft_k": "2"}, ""},
		{ActionRun, map[string]string{"prompt": "Once upon a time", "draft": ""}, ""},
		{ActionReset, nil, ""},
		{ActionVs, map[string]string{"vs": "Q9_9"}, ""}, // no run: it waits for one
		{ActionRun, form, ""},
	} {
		if err := se.Act(ctx, a.action, getter(a.get)); err != nil {
			t.Fatalf("%s: %v", a.action, err)
		}
		got := ""
		if v := se.Snapshot().Versus; v != nil {
			got = v.Type
		}
		if got != a.want {
			t.Errorf("after %s %v: compared with %q, want %q", a.action, a.get, got, a.want)
		}
	}
	// the type no model here can take, chosen before the run: refused at the run, in words, and dropped
	if sn := se.Snapshot(); sn.Spec.View.Vs != "" || !strings.Contains(sn.Notice, "Q9_9") {
		t.Errorf("after a run with Q9_9 chosen: vs %q, notice %q", sn.Spec.View.Vs, sn.Notice)
	}
}

// On Vulkan (lavapipe: skipped without it, failed under REQUIRE_VULKAN=1)
// the comparison is the converted model's own pass on that backend, and
// the drift it shows is the CPU's within a thousandth.
func TestVersusOnVulkan(t *testing.T) {
	ctx := context.Background()
	eng := modelstest.Lesson(t)
	lm, err := eng.Engine("lesson.gguf@Q4_0", "vulkan")
	if err != nil {
		t.Fatal(err)
	}
	if lm.Backend().Name != "vulkan" {
		if os.Getenv("REQUIRE_VULKAN") == "1" {
			t.Fatalf("REQUIRE_VULKAN=1: %s", lm.Backend().Note)
		}
		t.Skipf("no vulkan: %s", lm.Backend().Note)
	}
	drift := map[string][]float64{}
	for _, backend := range []string{"vulkan", "cpu"} {
		r := run("Once upon a time, there was")
		r.Backend, r.Sampler.Temperature, r.MaxTokens = backend, 0, 2
		r.View = spec.View{Layer: -1, StageName: "softmax", Vs: "Q4_0"}
		se := New("v", "", eng)
		defer se.Close()
		if err := se.Open(ctx, r); err != nil {
			t.Fatal(err)
		}
		sn := se.Snapshot()
		if sn.Versus == nil {
			t.Fatalf("%s: no comparison (%s)", backend, sn.Notice)
		}
		for _, L := range sn.Cursor.Steps[0].Layers {
			a, b := L.ResidMLP.X, sn.Versus.Step.Layers[L.Index].ResidMLP.X
			rel, _ := quantlens.RelErrCos(a[len(a)-1], b[len(b)-1])
			drift[backend] = append(drift[backend], rel)
		}
		if backend != "vulkan" {
			continue
		}
		direct := New("d", "", eng)
		defer direct.Close()
		rd := r
		rd.Model, rd.View.Vs = "lesson.gguf@Q4_0", ""
		if err := direct.Open(ctx, rd); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(passOf(direct.Snapshot().Cursor.Steps[0]), passOf(sn.Versus.Step)); diff != "" {
			t.Errorf("on Vulkan the prompt's pass under Q4_0 differs from a run of lesson.gguf@Q4_0 (-run +versus):\n%s", diff)
		}
	}
	if diff := cmp.Diff(drift["cpu"], drift["vulkan"], cmpopts.EquateApprox(0, 1e-3)); diff != "" {
		t.Errorf("the drift after each layer, CPU (-) and Vulkan (+):\n%s", diff)
	}
	t.Logf("drift after each layer at the last position: CPU %.5f, Vulkan %.5f", drift["cpu"], drift["vulkan"])
}

// The sessions beside a run hold memory the pool counts: the comparison
// with another type reserves its KV cache and recorded pass while it is
// chosen and gives them back when it is not; an ablation reserves its
// baseline's cache; a budget with room for the run but not for the
// comparison refuses the comparison in words and keeps the run as it was.
func TestBesideCountsAgainstTheBudget(t *testing.T) {
	ctx := context.Background()
	eng := modelstest.Lesson(t)
	p := NewPool(eng, PoolConfig{})
	se, err := p.New("a")
	if err != nil {
		t.Fatal(err)
	}
	r := run("Once upon a time")
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	own := p.Reserved()
	m := se.Snapshot().Model
	positions := len(se.Snapshot().Output.Prompt) + r.MaxTokens
	if err := se.Act(ctx, ActionVs, getter(map[string]string{"vs": "Q8_0"})); err != nil {
		t.Fatal(err)
	}
	if got, want := p.Reserved()-own, besideBytes(m, recordingFor(m.Config), positions, false, true); got != want || want <= 0 {
		t.Errorf("beside Q8_0 reserves %d more, want %d", got, want)
	}
	if err := se.Act(ctx, ActionVs, getter(map[string]string{"vs": "none"})); err != nil {
		t.Fatal(err)
	}
	if got := p.Reserved(); got != own {
		t.Errorf("without the comparison %d reserved, the run alone %d", got, own)
	}

	if err := r.SetInterventions("L2H1", "", ""); err != nil {
		t.Fatal(err)
	}
	if err := se.Run(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got, want := p.Reserved()-own, besideBytes(m, recordingFor(m.Config), positions, true, false); got != want || want <= 0 {
		t.Errorf("the ablation's baseline reserves %d more, want %d", got, want)
	}

	tight := NewPool(eng, PoolConfig{MemoryBudget: own + 1})
	ts, err := tight.New("b")
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Run(ctx, run("Once upon a time")); err != nil {
		t.Fatal(err)
	}
	err = ts.Act(ctx, ActionVs, getter(map[string]string{"vs": "Q8_0"}))
	if err == nil || !strings.Contains(err.Error(), "this run beside Q8_0 would hold about") || !strings.Contains(err.Error(), "--memory-budget") {
		t.Errorf("a comparison past the budget: %v", err)
	}
	if sn := ts.Snapshot(); sn.Versus != nil || sn.Spec.View.Vs != "" || tight.Reserved() != own {
		t.Errorf("after the refusal: vs %q, %d reserved (the run alone %d)", sn.Spec.View.Vs, tight.Reserved(), own)
	}
}

package session

import (
	"context"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine"
	"stepthrough/engine/sample"
	"stepthrough/engine/trace"
	"stepthrough/models/modelstest"
	"stepthrough/spec"
)

// Generate's recorded passes are the Explorer's trace of the same run
// (prompt, sampler, seed, interventions), on the CPU and on Vulkan
// (lavapipe: skipped without it, failed under REQUIRE_VULKAN=1); and the
// two backends generate the same tokens with the same lens tops.
func TestGenerateProbeIsTheExplorers(t *testing.T) {
	reg := modelstest.Lesson(t)
	ctx := context.Background()
	probe := Probe{Lens: 3, Layers: []int{3, 0}, Heads: []int{5, 0}, Norms: true}
	got := map[string][]*Pass{}
	tokens := map[string][]int32{}
	for _, backend := range []string{"cpu", "vulkan"} {
		t.Run(backend, func(t *testing.T) {
			lm, err := reg.Engine("lesson.gguf", backend)
			if err != nil {
				t.Fatal(err)
			}
			if lm.Backend().Name != backend {
				if os.Getenv("REQUIRE_VULKAN") == "1" {
					t.Fatalf("REQUIRE_VULKAN=1: %s", lm.Backend().Note)
				}
				t.Skipf("no %s: %s", backend, lm.Backend().Note)
			}
			r := spec.Default("lesson.gguf")
			r.Prompt, r.Backend, r.MaxTokens = "Once upon a time", backend, 6
			if err := r.SetInterventions("L2H1;L3U7", "", ""); err != nil {
				t.Fatal(err)
			}
			r.Sampler.Temperature, r.Sampler.Seed, r.Sampler.SeedSet = 0, 1, true
			se := New("p", "", reg)
			defer se.Close()
			if err := se.Open(ctx, r); err != nil {
				t.Fatal(err)
			}
			if err := se.Act(ctx, "end", nil); err != nil {
				t.Fatal(err)
			}
			snap := se.Snapshot()
			smp, err := sample.New(r.Sampler)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int32
			var passes []*Pass
			iv, err := r.Checked()
			if err != nil {
				t.Fatal(err)
			}
			_, err = Generate(ctx, lm, iv, snap.Prompt, probe, engine.Gen{Limits: engine.Limits{MaxTokens: r.MaxTokens}, Sampler: smp},
				func(id int32, _ []float32, p *Pass) error {
					ids, passes = append(ids, id), append(passes, p)
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids, snap.Gen) {
				t.Fatalf("Generate made %v, the Explorer %v", ids, snap.Gen)
			}
			for j, st := range snap.Cursor.Steps {
				if d := cmp.Diff(fromTrace(st, probe), passes[j], near(1e-6)); d != "" {
					t.Errorf("token %d: the Explorer's (-) and Generate's (+):\n%s", j, d)
				}
			}
			got[backend], tokens[backend] = passes, ids
		})
	}
	if got["vulkan"] == nil || t.Failed() {
		return
	}
	if !slices.Equal(tokens["cpu"], tokens["vulkan"]) {
		t.Fatalf("the CPU generated %v, Vulkan %v", tokens["cpu"], tokens["vulkan"])
	}
	if d := cmp.Diff(got["cpu"], got["vulkan"], near(2e-3)); d != "" {
		t.Errorf("the CPU's (-) and Vulkan's (+) internals:\n%s", d)
	}
}

// near compares float32s to a relative tol.
func near(tol float64) cmp.Option {
	return cmp.Comparer(func(a, b float32) bool {
		return math.Abs(float64(a-b)) <= tol*max(1, math.Abs(float64(a)))
	})
}

// fromTrace is the Pass the Explorer's step records for p.
func fromTrace(st *trace.Step, p Probe) *Pass {
	ps := &Pass{Position: st.Pos0 + st.N - 1}
	last := st.Layers[len(st.Layers)-1].Lens
	final := last.Top[len(last.Top)-1][0].ID
	for _, L := range st.Layers {
		top := L.Lens.Top[len(L.Lens.Top)-1]
		ps.Lens = append(ps.Lens, LensLayer{Top: top, FinalRank: sample.Rank(L.Lens.Last, final)})
		ps.Norms = append(ps.Norms, L.ResidMLP.Norms[len(L.ResidMLP.Norms)-1])
	}
	for _, l := range p.Layers {
		w := st.Layers[l].Attention.Weights
		for _, h := range p.Heads {
			ps.Attention = append(ps.Attention, []float32(w[len(w)-1][h]))
		}
	}
	return ps
}

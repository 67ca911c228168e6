package present

import (
	"context"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/models/modelstest"
	"stepthrough/session"
	"stepthrough/spec"
	"stepthrough/views"
)

// openAt opens a run of model compared with vs at a stage (layer from 1).
func openAt(t *testing.T, se *session.Session, model, vs, stage string, layer int) views.Explorer {
	t.Helper()
	r := run("Once upon a time, there was a girl named")
	r.Model, r.Sampler.Temperature, r.MaxTokens = model, 0, 2
	r.View = spec.View{StageName: stage, Layer: layer - 1, Vs: vs}
	if err := se.Open(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return Explorer(se)
}

// Beside Q4_0 each stage shows its vectors under both types and the
// drift of every block passed so far, the map marking the same blocks;
// the same type beside itself drifts exactly 0.
func TestVersusStages(t *testing.T) {
	reg := modelstest.Lesson(t)
	se := session.New("v", "", reg)
	defer se.Close()
	for _, tc := range []struct {
		stage      string
		layer      int
		rows, dist bool
		drift      int // blocks passed
	}{
		{"tokenize", 0, false, false, 0},
		{"embed", 0, true, false, 0},
		{"attention", 2, true, false, 3}, // layer 1's two blocks and layer 2's attention
		{"mlp", 2, true, false, 4},
		{"softmax", 0, false, true, -1}, // every block
		{"kv", 0, true, true, -1},
	} {
		t.Run(tc.stage, func(t *testing.T) {
			e := openAt(t, se, "lesson.gguf", "Q4_0", tc.stage, tc.layer)
			x := e.Versus
			if x == nil || x.Type != "Q4_0" || x.Own != "F32" || x.What == "" {
				t.Fatalf("versus %+v", x)
			}
			if (len(x.Rows) > 0) != tc.rows || x.HaveDist != tc.dist {
				t.Errorf("rows %d, distribution %v; want rows %v, distribution %v", len(x.Rows), x.HaveDist, tc.rows, tc.dist)
			}
			for _, r := range x.Rows {
				if !(r.RelErr > 0 && r.RelErr < 1 && r.Cosine > 0.5 && r.Cosine < 1 && r.MaxAbs > 0) || len(r.Diff.Values) != len(r.Own.Values) {
					t.Errorf("%s: relative error %g, cosine %g, largest %g", r.Label, r.RelErr, r.Cosine, r.MaxAbs)
				}
			}
			want := tc.drift
			if want < 0 {
				want = 2 * se.Snapshot().Model.Config.Layers
			}
			if len(x.Drift) != want || len(e.Map.Drift) != want {
				t.Errorf("drift over %d blocks, map marks %d; want %d", len(x.Drift), len(e.Map.Drift), want)
			}
			if tc.dist && (x.KL <= 0 || len(x.Tops) != versusTops || x.Tops[0].Own < x.Tops[1].Own) {
				t.Errorf("distribution: KL %g, %d tokens", x.KL, len(x.Tops))
			}
		})
	}

	e := openAt(t, se, "lesson.gguf@Q8_0", "Q8_0", "softmax", 0)
	x := e.Versus
	if x == nil || x.Own != "Q8_0" || x.KL != 0 || x.OwnTop != x.VsTop {
		t.Fatalf("Q8_0 beside itself: %+v", x)
	}
	for _, d := range x.Drift {
		if d.RelErr != 0 || d.Cosine != 1 || d.Level != views.DriftSmall {
			t.Errorf("Q8_0 beside itself drifts after layer %d's %s: %g (cosine %g)", d.Layer, d.Block, d.RelErr, d.Cosine)
		}
	}
}

// The drift levels the map marks, at their edges.
func TestDriftLevel(t *testing.T) {
	var got []int
	for _, rel := range []float64{0, 0.0099, 0.01, 0.0999, 0.1, 3, math.Inf(1), math.NaN()} {
		got = append(got, views.DriftLevel(rel))
	}
	want := []int{1, 1, 2, 2, 3, 3, 3, 3}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("levels (-want +got):\n%s", diff)
	}
}

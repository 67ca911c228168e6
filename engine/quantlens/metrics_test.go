package quantlens

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRelErrCos(t *testing.T) {
	for _, tc := range []struct {
		name     string
		a, b     []float32
		rel, cos float64
	}{
		{"equal", []float32{3, 4}, []float32{3, 4}, 0, 1},
		{"scaled", []float32{3, 4}, []float32{6, 8}, 1, 1},
		{"orthogonal", []float32{1, 0}, []float32{0, 1}, math.Sqrt2, 0},
		{"opposite", []float32{1, 2}, []float32{-1, -2}, 2, -1},
		{"both zero", []float32{0, 0}, []float32{0, 0}, 0, 1},
		{"zero reference", []float32{0, 0}, []float32{1, 0}, math.Inf(1), 0},
		{"zero other", []float32{1, 0}, []float32{0, 0}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel, cos := RelErrCos(tc.a, tc.b)
			if d := cmp.Diff([]float64{tc.rel, tc.cos}, []float64{rel, cos}, cmpopts.EquateApprox(0, 1e-12)); d != "" {
				t.Errorf("relative error, cosine (-want +got):\n%s", d)
			}
		})
	}
}

func TestJSBits(t *testing.T) {
	for _, tc := range []struct {
		name string
		p, q []float32
		want float64
	}{
		{"equal", []float32{0.25, 0.75}, []float32{0.25, 0.75}, 0},
		{"disjoint", []float32{1, 0}, []float32{0, 1}, 1},
		// ½·1·log2(1/0.75) + ½·(0.5·log2(0.5/0.75) + 0.5·log2(0.5/0.25))
		{"half shared", []float32{1, 0}, []float32{0.5, 0.5}, 0.5*math.Log2(1/0.75) + 0.25*math.Log2(0.5/0.75) + 0.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := JSBits(tc.p, tc.q); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("JS = %g bits, want %g", got, tc.want)
			}
		})
	}
}

func TestSpreadOf(t *testing.T) {
	got := []Spread{SpreadOf(nil), SpreadOf([]float64{3, 1, 2}), SpreadOf([]float64{4, 1, 2, 3})}
	want := []Spread{{}, {Min: 1, Median: 2, Max: 3, Mean: 2}, {Min: 1, Median: 2.5, Max: 4, Mean: 2.5}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("spreads (-want +got):\n%s", d)
	}
}

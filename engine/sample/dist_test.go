package sample

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestLogSoftmax(t *testing.T) {
	got := LogSoftmax([]float32{1, 2, 3})
	z := math.Exp(1) + math.Exp(2) + math.Exp(3)
	for i, v := range []float64{1, 2, 3} {
		if want := v - math.Log(z); math.Abs(got[i]-want) > 1e-12 {
			t.Errorf("log p[%d] = %v, want %v", i, got[i], want)
		}
	}
	if big := LogSoftmax([]float32{1000, 1000}); math.Abs(big[0]-math.Log(0.5)) > 1e-12 {
		t.Errorf("large logits: %v", big)
	}
}

func TestArgmaxAndTopN(t *testing.T) {
	nan := float32(math.NaN())
	cases := []struct {
		name   string
		x      []float32
		n      int
		argmax int
		top    []int32
	}{
		{"empty", nil, 3, -1, []int32{}},
		{"ties by index", []float32{0.1, 0, 0.4, 0.2, 0.2, 0.1}, 3, 2, []int32{2, 3, 4}},
		{"n beyond the length", []float32{3, 1, 2}, 5, 0, []int32{0, 2, 1}},
		{"first of equals", []float32{5, 5, 5}, 2, 0, []int32{0, 1}},
		{"NaN skipped", []float32{nan, 1, 2}, 2, 2, []int32{2, 1}},
		{"all negative", []float32{-3, -1, -2, -1}, 2, 1, []int32{1, 3}},
		{"NaN before negatives", []float32{nan, -2, -1, nan}, 1, 2, []int32{2}},
		{"only NaN", []float32{nan, nan}, 1, -1, []int32{}},
		{"infinities", []float32{float32(math.Inf(-1)), float32(math.Inf(-1)), float32(math.Inf(1))}, 1, 2, []int32{2}},
		{"all minus infinity", []float32{float32(math.Inf(-1)), float32(math.Inf(-1))}, 1, 0, []int32{0}},
		{"none", []float32{1}, 0, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Argmax(c.x); got != c.argmax {
				t.Errorf("Argmax = %d, want %d", got, c.argmax)
			}
			if got := TopN(c.x, c.n); !slices.Equal(got, c.top) {
				t.Errorf("TopN = %v, want %v", got, c.top)
			}
		})
	}
}

// Rank counts the larger values: ties share the better rank, NaNs never
// count as larger.
func TestRank(t *testing.T) {
	x := []float32{0.5, 2, 2, -1, float32(math.NaN())}
	for i, want := range []int{3, 1, 1, 4} {
		if got := Rank(x, int32(i)); got != want {
			t.Errorf("Rank(x, %d) = %d, want %d", i, got, want)
		}
	}
}

func BenchmarkArgmax(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 32000)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for b.Loop() {
		Argmax(x)
	}
}

// TestArgmaxAgreesWithScan checks Argmax against the plain scan on random
// vectors of every length up to 40, drawn from few values (ties) with NaNs
// and infinities.
func TestArgmaxAgreesWithScan(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vals := []float32{float32(math.NaN()), float32(math.Inf(-1)), float32(math.Inf(1)), -2, -1, 0, 1, 2}
	for n := range 41 {
		for range 200 {
			x := make([]float32, n)
			for i := range x {
				x[i] = vals[r.IntN(len(vals))]
			}
			want := -1
			for i, v := range x {
				if v == v && (want < 0 || v > x[want]) {
					want = i
				}
			}
			if got := Argmax(x); got != want {
				t.Fatalf("Argmax(%v) = %d, want %d", x, got, want)
			}
		}
	}
}

// KL against hand-computed values: p = (1/4, 3/4) from q = (1/2, 1/2) is
// 1/4·ln(1/2) + 3/4·ln(3/2); equal distributions give exactly 0, and a
// token q never draws counts only where p draws it.
func TestKL(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ref, q []float32
		want   float64
	}{
		{"hand", []float32{0, float32(math.Log(3))}, []float32{0, 0}, 0.25*math.Log(0.5) + 0.75*math.Log(1.5)},
		{"equal", []float32{1, 2, 3}, []float32{1, 2, 3}, 0},
		{"shifted logits are the same distribution", []float32{1, 2, 3}, []float32{11, 12, 13}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := KL(LogSoftmax(tc.ref), LogSoftmax(tc.q))
			if math.Abs(got-tc.want) > 1e-6 {
				t.Errorf("KL = %.9f, want %.9f", got, tc.want)
			}
		})
	}
}

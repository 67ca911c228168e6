package present

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/quantlens"
)

func TestNiceCeil(t *testing.T) {
	var got []float64
	for _, v := range []float64{0, 0.013, 0.2, 0.21, 0.7, 3} {
		got = append(got, niceCeil(v))
	}
	if d := cmp.Diff([]float64{1e-6, 0.02, 0.2, 0.5, 1, 5}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// The lens's first disagreement in words: on the next token, and over
// every position.
func TestLensWords(t *testing.T) {
	r := func(first ...int) *quantlens.Report {
		return &quantlens.Report{Layers: make([]quantlens.Layer, 4), FirstDisagree: first}
	}
	for _, tc := range []struct {
		name string
		r    *quantlens.Report
		want string
	}{
		{"never", r(-1, -1, -1), "Q4_0: on the next token (the prompt's last position) the logit lens picks the same top token as the model as stored after every one of the 4 layers; at every other position too."},
		{"elsewhere", r(2, -1, 1, -1), "Q4_0: on the next token (the prompt's last position) the logit lens picks the same top token as the model as stored after every one of the 4 layers; over all 4 positions, the first disagreement is after layer 2, and 2 positions disagree somewhere."},
		{"next token", r(-1, 3), "Q4_0: on the next token (the prompt's last position) the logit lens first picks another top token than the model as stored after layer 4 of 4; over all 2 positions, the first disagreement is after layer 4, and 1 position disagrees somewhere."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, lensWords("Q4_0", tc.r)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

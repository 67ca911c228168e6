package serve

import "testing"

// The fit recovers an exact line, and a measured sweep rises with length.
func TestSweepFit(t *testing.T) {
	sw := Sweep{Points: []SweepPoint{{8, 3_000_000}, {16, 5_000_000}, {32, 9_000_000}}}
	sw.fit()
	if sw.Slope != 250_000 || sw.Intercept != 1_000_000 || sw.R2 < 0.999999 {
		t.Errorf("fit %+v", sw)
	}
	if got := SweepLengths(100); len(got) != 4 || got[3] != 64 {
		t.Errorf("lengths %v", got)
	}
}

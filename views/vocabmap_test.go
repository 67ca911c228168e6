package views

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// labelBox is a placed label's box, as PlaceLabels measures it.
func labelBox(l MapLabel) box {
	w := labelChar * float64(utf8.RuneCountInString(l.Label))
	b := box{l.LX, l.LY - labelH, l.LX + w, l.LY + 0.01}
	if l.Anchor == "end" {
		b.x0, b.x1 = l.LX-w, l.LX
	}
	return b
}

// No shown label covers another or another point, however crowded the
// map; a lone point is always labelled, and prompt tokens come first.
func TestPlaceLabels(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 5, 40, 120} {
		pts := make([]Point, n)
		for i := range pts {
			pts[i] = Point{Label: []string{" the", " dog", "ing", " Lily", "."}[i%5], X: r.Float64()*2 - 1, Y: r.Float64()*2 - 1, Prompt: i%4 == 0}
		}
		got := PlaceLabels(pts)
		shown, prompts := 0, 0
		for i, a := range got {
			if !a.Shown {
				continue
			}
			shown++
			if a.Prompt {
				prompts++
			}
			for j, b := range got {
				if j != i && b.Shown && labelBox(a).overlaps(labelBox(b)) {
					t.Fatalf("%d points: labels %d %q and %d %q overlap", n, i, a.Label, j, b.Label)
				}
				if j != i && labelBox(a).overlaps(box{b.X - 0.03, -b.Y - 0.03, b.X + 0.03, -b.Y + 0.03}) {
					t.Fatalf("%d points: label %d %q covers point %d", n, i, a.Label, j)
				}
			}
		}
		if n == 1 && shown != 1 {
			t.Errorf("a lone point is not labelled")
		}
		if n == 40 && (shown < n/2 || prompts == 0) {
			t.Errorf("%d points: only %d labels shown (%d prompt tokens)", n, shown, prompts)
		}
		t.Logf("%d points: %d labelled", n, shown)
	}
}

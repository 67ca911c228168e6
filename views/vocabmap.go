package views

import "unicode/utf8"

// The embedding panel's map: labels placed so that none covers another.

// MapLabel is where a point's label goes on the vocabulary map, in the
// map's units; Shown is false when every place near the point was taken
// (its label is then the point's hover title only).
type MapLabel struct {
	Point
	LX, LY float64
	Anchor string // SVG text-anchor: "start" (right of the point) or "end"
	Shown  bool
}

// The map's label metrics, in its units (the text is .075 high; its box
// reaches .07 above the baseline and .02 below), and the map's bounds
// (its viewBox).
const (
	labelH    = 0.07
	labelDown = 0.02
	labelChar = 0.043 // a character's width, generously
	labelGap  = 0.045
	dotR      = 0.036 // a point's radius with its stroke
	mapX0     = -1.35
	mapX1     = 1.35
	mapY0     = -1.2
	mapY1     = 1.2
)

type box struct{ x0, y0, x1, y1 float64 }

func (a box) overlaps(b box) bool { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1 }

// PlaceLabels lays out the labels of pts (prompt tokens first, so they
// get the first choice): to the right of each point, else left, above
// or below, the first place that covers no other label and no point.
func PlaceLabels(pts []Point) []MapLabel {
	out := make([]MapLabel, len(pts))
	dots := make([]box, len(pts))
	for i, p := range pts {
		out[i] = MapLabel{Point: p}
		dots[i] = box{p.X - dotR, -p.Y - dotR, p.X + dotR, -p.Y + dotR}
	}
	var taken []box
	for _, prompt := range []bool{true, false} {
		for i, p := range pts {
			if p.Prompt != prompt {
				continue
			}
			out[i].LX, out[i].LY, out[i].Anchor = p.X+labelGap, -p.Y+0.03, "start"
			w := labelChar * float64(utf8.RuneCountInString(p.Label))
			for _, c := range []struct {
				dx, dy float64
				anchor string
			}{{labelGap, 0.03, "start"}, {-labelGap, 0.03, "end"}, {-w / 2, -0.06, "start"}, {-w / 2, 0.12, "start"}} {
				x, y := p.X+c.dx, -p.Y+c.dy
				b := box{x, y - labelH, x + w, y + labelDown}
				if c.anchor == "end" {
					b.x0, b.x1 = x-w, x
				}
				if inside(b) && free(b, taken, dots, i) {
					out[i].LX, out[i].LY, out[i].Anchor, out[i].Shown = x, y, c.anchor, true
					taken = append(taken, b)
					break
				}
			}
		}
	}
	return out
}

// inside reports whether b is within the map (a label past its edge
// would be cut).
func inside(b box) bool { return b.x0 >= mapX0 && b.x1 <= mapX1 && b.y0 >= mapY0 && b.y1 <= mapY1 }

// free reports whether b covers no taken label and no point but self's.
func free(b box, taken, dots []box, self int) bool {
	for _, t := range taken {
		if b.overlaps(t) {
			return false
		}
	}
	for j, d := range dots {
		if j != self && b.overlaps(d) {
			return false
		}
	}
	return true
}

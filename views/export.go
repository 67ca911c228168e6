package views

import (
	"bytes"
	"fmt"
	"html"
	"math"
)

// StageExport is one stage drawn as a standalone SVG for handouts.
type StageExport struct {
	Title   string   // what the stage is
	Caption []string // prompt, model, settings, seed, where: printed under the title
	Current Stage
	Panel   Panel
}

// svgW is the drawing's width in px; the height follows the content.
const svgW = 900

type svgDoc struct {
	b bytes.Buffer
	y int
}

func (d *svgDoc) text(x, y int, size int, weight, s string) {
	fmt.Fprintf(&d.b, `<text x="%d" y="%d" font-size="%d" font-weight="%s">%s</text>`, x, y, size, weight, html.EscapeString(s))
}

func (d *svgDoc) rect(x, y int, w, h float64, fill string) {
	fmt.Fprintf(&d.b, `<rect x="%d" y="%d" width="%.2f" height="%.2f" fill="%s"/>`, x, y, w, h, fill)
}

// bars draws labelled horizontal bars; width is 0..100.
func (d *svgDoc) bars(rows []Bar, value func(Bar) string, fill func(Bar) string) {
	for _, b := range rows {
		d.y += 20
		d.text(16, d.y, 13, "normal", b.Piece)
		d.text(180, d.y, 11, "normal", "id "+id32(b.ID))
		d.rect(260, d.y-12, 4.5*math.Max(0, math.Min(100, b.Width)), 14, fill(b))
		d.text(720, d.y, 13, "normal", value(b))
		if b.Chosen {
			d.text(820, d.y, 13, "bold", "← chosen")
		}
	}
}

// strip draws a vector as a row of coloured cells.
func (d *svgDoc) strip(r VecRow) {
	d.y += 18
	d.text(16, d.y, 12, "normal", r.Label)
	d.y += 4
	n := len(r.Values)
	if n == 0 {
		return
	}
	w := float64(svgW-32) / float64(n)
	for i, v := range r.Values {
		fmt.Fprintf(&d.b, `<rect x="%.2f" y="%d" width="%.2f" height="14" fill="%s"/>`, 16+w*float64(i), d.y, w+0.05, lightHeat(v, r.Max))
	}
	fmt.Fprintf(&d.b, `<rect x="16" y="%d" width="%d" height="14" fill="none" stroke="#999" stroke-width="0.5"/>`, d.y, svgW-32)
	d.y += 14
}

// StageSVG draws a stage's numbers (the same ones the panel shows) with
// a title and caption, in black on white for printing.
func StageSVG(x StageExport) []byte {
	var d svgDoc
	d.y = 28
	d.text(16, d.y, 20, "bold", x.Title)
	for _, c := range x.Caption {
		d.y += 18
		d.text(16, d.y, 12, "normal", c)
	}
	d.y += 10
	if x.Panel != nil {
		x.Panel.svg(&d)
	} else {
		d.y += 20
		d.text(16, d.y, 13, "normal", "This stage has no numbers to draw.")
	}
	d.y += 28
	d.text(16, d.y, 10, "normal", "Stepthrough — every number above was computed by the engine for this exact prompt, settings and seed.")
	h := d.y + 14
	var out bytes.Buffer
	fmt.Fprintf(&out, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Arial, sans-serif">`, svgW, h, svgW, h)
	fmt.Fprintf(&out, `<rect width="%d" height="%d" fill="#fff"/>`, svgW, h)
	out.Write(d.b.Bytes())
	out.WriteString(`</svg>`)
	return out.Bytes()
}

// FormatNumber formats a number as the panels and exports do.
func FormatNumber(v float64) string { return f(v) }

// FormatPercent formats a probability as the panels and exports do.
func FormatPercent(p float64) string { return pct(p) }

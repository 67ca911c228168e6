package views

import (
	"cmp"
	"fmt"
	"html"
	"math"
)

// The handout drawing of each stage's panel (StageSVG draws the title,
// caption and footer around it).
func (p *TokenizePanel) svg(d *svgDoc) {
	d.y += 20
	d.text(16, d.y, 13, "normal", fmt.Sprintf("The prompt cut into %d tokens; each box shows the token (· a space it carries) and its id below.", len(p.Tokens)))
	cx := 16
	d.y += 12
	for _, t := range p.Tokens {
		show := cmp.Or(t.Show, t.Bytes)
		w := max(8*len([]rune(show)), 7*len(id32(t.ID))) + 14
		if cx+w > svgW-16 {
			cx, d.y = 16, d.y+46
		}
		fill, stroke := "#eef4ff", "#336"
		if t.Special || t.Added {
			fill, stroke = "#fff4d6", "#a35a00"
		}
		fmt.Fprintf(&d.b, `<rect x="%d" y="%d" width="%d" height="38" rx="4" fill="%s" stroke="%s"/>`, cx, d.y, w, fill, stroke)
		d.text(cx+6, d.y+16, 13, "normal", show)
		d.text(cx+6, d.y+32, 11, "normal", id32(t.ID))
		cx += w + 4
	}
	d.y += 44
}

func (p *EmbedPanel) svg(d *svgDoc) {
	d.y += 6
	d.text(16, d.y, 13, "normal", fmt.Sprintf("Position %d: %s (id %d) selects row %d of the %d × %d embedding table (rows around it; blue negative, orange positive).", p.Pos, p.Piece, p.ID, p.ID, p.Vocab, p.Embd))
	for i, r := range p.Table {
		if i == p.Lit {
			r.Label = "→ " + r.Label + " (the row looked up)"
		}
		d.strip(r)
	}
	if len(p.PosRow.Values) > 0 {
		d.y += 8
		d.text(16, d.y, 13, "bold", "+ the learned position row")
		d.strip(p.PosRow)
	}
	d.y += 8
	d.text(16, d.y, 13, "bold", "= the input to layer 1")
	d.strip(p.Input)
	if len(p.Rows) > 1 {
		d.y += 12
		d.text(16, d.y, 13, "bold", "Every new position's input")
		for _, r := range p.Rows {
			d.strip(r)
		}
	}
}

func (a *AttentionPanel) svg(d *svgDoc) {
	d.y += 6
	kind := "weights after softmax (rows sum to 1)"
	if a.ShowScores {
		kind = "scaled scores before softmax"
	}
	d.text(16, d.y, 13, "normal", fmt.Sprintf("Layer %d of %d, head %d of %d: %s; later positions are masked (grey)", a.Layer+1, a.Layers, a.Head+1, a.Heads, kind))
	top := d.y + 90
	cell := min(28, (svgW-200)/max(1, len(a.KeyLabels)))
	every := labelEvery(len(a.KeyLabels))
	for j, k := range a.KeyLabels {
		if j%every == 0 || j == len(a.KeyLabels)-1 {
			fmt.Fprintf(&d.b, `<text x="%d" y="%d" font-size="11" transform="rotate(-60 %d %d)">%s</text>`, 166+cell*j, top-4, 166+cell*j, top-4, html.EscapeString(short(k)))
		}
	}
	for i, row := range a.Cells {
		y := top + cell*i
		d.text(16, y+cell-8, 11, "normal", short(a.QueryLabels[i]))
		for j, v := range row {
			fill, ink := lightSeq(v, a.Min, a.Max)
			fmt.Fprintf(&d.b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#ccc" stroke-width="0.5"/>`, 160+cell*j, y, cell-1, cell-1, fill)
			if cell >= 24 && !math.IsNaN(float64(v)) && !a.ShowScores {
				fmt.Fprintf(&d.b, `<text x="%d" y="%d" font-size="9" fill="%s">%.2f</text>`, 160+cell*j+2, y+cell-9, ink, v)
			}
		}
		if i == a.Current {
			fmt.Fprintf(&d.b, `<rect x="159" y="%d" width="%d" height="%d" fill="none" stroke="#000" stroke-width="2"/>`, y-1, cell*len(row)+1, cell+1)
		}
	}
	d.y = top + cell*len(a.Cells) + 10
	if len(a.Arcs) > 0 {
		d.y += 16
		d.text(16, d.y, 13, "normal", "Where the current token looks: an arc to each position, as thick as its weight")
		n := len(a.Arcs)
		dx := math.Min(70, float64(svgW-60)/float64(n))
		base := float64(d.y + 130)
		qx := 30 + dx*float64(n-1)
		for j, w := range a.Arcs {
			kx := 30 + dx*float64(j)
			fmt.Fprintf(&d.b, `<path d="%s" fill="none" stroke="#0033cc" stroke-opacity="%.2f" stroke-width="%.2f"/>`, arcPathAt(qx, kx, base), 0.2+0.8*float64(w), 0.5+14*float64(w))
			if j%every == 0 || j == n-1 {
				fmt.Fprintf(&d.b, `<text x="%.1f" y="%.0f" font-size="11" text-anchor="middle">%s</text>`, kx, base+16, html.EscapeString(short(a.KeyLabels[j])))
			}
		}
		d.y = int(base) + 24
	}
}

func (m *MLPPanel) svg(d *svgDoc) {
	d.y += 6
	d.text(16, d.y, 13, "normal", fmt.Sprintf("Layer %d feed-forward (%s), the last token: before and after the nonlinearity", m.Layer+1, m.Kind))
	for _, r := range []VecRow{m.Pre, m.Post, m.Up, m.Act, m.ResidBefore, m.Out, m.ResidAfter} {
		if len(r.Values) > 0 {
			d.strip(r)
		}
	}
	d.y += 20
	d.text(16, d.y, 13, "normal", fmt.Sprintf("Residual-stream norm: before attention %s, after attention %s, after MLP %s", f32(m.NormBefore), f32(m.NormAfterAttn), f32(m.NormAfterMLP)))
}

func (l *LogitsPanel) svg(d *svgDoc) {
	d.y += 6
	d.text(16, d.y, 13, "normal", fmt.Sprintf("Raw scores (logits) at position %d, top %d of %d — not probabilities", l.Pos, len(l.Top), l.Vocab))
	d.bars(l.Top, func(b Bar) string { return "logit " + f(b.Value) }, func(Bar) string { return "#3b6ea8" })
	d.y += 20
	d.text(16, d.y, 12, "normal", fmt.Sprintf("%d more tokens, logits %s to %s", l.Rest, f(l.RestMin), f(l.RestMax)))
}

func (s *SoftmaxPanel) svg(d *svgDoc) {
	d.y += 6
	d.text(16, d.y, 13, "normal", fmt.Sprintf("Probabilities BEFORE sampling: softmax at T = %s over %d tokens (sum %s), bars on one 0–100%% scale", fx(s.Temperature), s.Vocab, f(s.Sum)))
	if s.ChainErr == "" {
		d.y += 16
		d.text(16, d.y, 12, "normal", fmt.Sprintf("at %s and top-p %s the run's sampler chain keeps %d for the draw (%s): %s", chainT(s), fx(s.TopP), s.Kept, pct(s.KeptP), chainCounts(s)))
	}
	for i, b := range s.Top {
		d.bars([]Bar{b}, func(b Bar) string { return fmt.Sprintf("p %s · cum %s%s", pct(b.Value), pct(b.Cum), outMark(b.Out)) }, func(b Bar) string {
			if b.Out {
				return "#ddd"
			}
			return "#d08a2c"
		})
		if s.Prefix && i == s.Kept-1 && s.Kept < s.Vocab {
			fmt.Fprintf(&d.b, `<line x1="16" x2="%d" y1="%d" y2="%d" stroke="#b00020" stroke-width="2" stroke-dasharray="6 3"/>`, svgW-16, d.y+5, d.y+5)
		}
	}
	d.y += 20
	d.text(16, d.y, 12, "normal", fmt.Sprintf("%d more tokens share %s", s.Rest, pct(s.RestP)))
}

func (s *SamplerPanel) svg(d *svgDoc) {
	d.y += 6
	state := fmt.Sprintf("kept %d of %d", s.After, s.Before)
	if s.Skipped {
		state = "skipped at this setting"
	}
	d.text(16, d.y, 13, "normal", fmt.Sprintf("Sampler step %d of %d: %s %s — %s", s.Index+1, s.Count, s.Name, s.Setting, state))
	for i, f := range s.Funnel { // the chain as a funnel
		d.y += 20
		w := funnelWidth(f.Out, s.Funnel[0].In) * 0.9
		fill := "#cfe8d8"
		if i == s.Index {
			fill = "#5a9a4a"
		}
		d.rect(int(460-w/2), d.y-13, w, 16, fill)
		d.text(16, d.y, 12, "normal", fmt.Sprintf("%d. %s", i+1, f.Name))
		d.text(720, d.y, 12, "normal", fmt.Sprintf("%d → %d", f.In, f.Out))
	}
	d.y += 10
	d.text(16, d.y+14, 12, "normal", "Kept, renormalised (p going in → p after)")
	d.bars(s.Kept, func(b Bar) string { return beforePct(b.Before) + " → " + pct(b.Value) }, func(Bar) string { return "#5a9a4a" })
	if len(s.Removed) > 0 {
		d.y += 24
		d.text(16, d.y, 13, "bold", fmt.Sprintf("Removed (%d)", s.RemovedCount))
		d.bars(s.Removed, func(b Bar) string { return "p was " + beforePct(b.Before) }, func(Bar) string { return "#bbb" })
	}
}

func (s *SamplePanel) svg(d *svgDoc) {
	d.y += 6
	if s.Greedy {
		d.text(16, d.y, 13, "normal", "Greedy: the most likely token is taken, no random draw.")
	} else {
		d.text(16, d.y, 13, "normal", fmt.Sprintf("The draw: u = %.4f falls in the chosen token's slice of the cumulative distribution", s.U))
		d.y += 14
		for _, c := range s.CDF {
			x0, x1 := 16+(svgW-32)*c.From, 16+(svgW-32)*c.To
			fill := "#ddd"
			if c.Chosen {
				fill = "#d08a2c"
			}
			fmt.Fprintf(&d.b, `<rect x="%.2f" y="%d" width="%.2f" height="24" fill="%s" stroke="#fff"/>`, x0, d.y, math.Max(0.5, x1-x0), fill)
		}
		ux := 16 + (svgW-32)*s.U
		fmt.Fprintf(&d.b, `<line x1="%.2f" x2="%.2f" y1="%d" y2="%d" stroke="#000" stroke-width="2"/>`, ux, ux, d.y-4, d.y+28)
		d.y += 30
	}
	d.bars([]Bar{s.Chosen}, func(b Bar) string { return "p " + pct(b.Value) }, func(Bar) string { return "#d08a2c" })
}

func (k *KVPanel) svg(d *svgDoc) {
	d.y += 6
	d.text(16, d.y, 13, "normal", fmt.Sprintf("KV cache: appended %d positions to each of %d layers; %d of %d positions cached;", k.Appended, len(k.Layers), k.Len, k.Capacity))
	d.y += 16
	d.text(16, d.y, 13, "normal", fmt.Sprintf("%d bytes used (%d per position per layer); %d read, not recomputed", k.BytesUsed, k.RowBytes, k.Saved))
	d.y += 8
	cw := min(48, (svgW-200)/max(1, len(k.Layers)))
	for i, l := range k.Layers {
		d.text(190+cw*i, d.y+12, 11, "bold", fmt.Sprintf("L%d", l.Layer+1))
	}
	d.y += 14
	for _, p := range k.Positions { // the table: K and V per layer, this step's rows filled
		d.y += 16
		label := fmt.Sprintf("%d %s", p.Pos, short(p.Token))
		if p.New {
			label += " new"
		}
		d.text(16, d.y, 11, "normal", label)
		for i := range k.Layers {
			kf, vf := "#eee", "#eee"
			if p.New {
				kf, vf = "#0033cc", "#d08a2c"
			}
			d.rect(190+cw*i, d.y-11, float64(cw/2-2), 13, kf)
			d.rect(190+cw*i+cw/2, d.y-11, float64(cw/2-2), 13, vf)
		}
	}
	d.y += 8
	d.text(16, d.y+14, 12, "normal", "filled and marked new: appended this step (K blue, V orange); grey: read from the cache")
	d.y += 14
	for _, l := range k.Layers[:k.LayersDrawn] {
		for i, r := range l.NewK {
			r.Label = fmt.Sprintf("layer %d: %s", l.Layer+1, r.Label)
			d.strip(r)
			if i < len(l.NewV) {
				v := l.NewV[i]
				v.Label = fmt.Sprintf("layer %d: %s", l.Layer+1, v.Label)
				d.strip(v)
			}
		}
	}
}

func (s *SpeculativePanel) svg(d *svgDoc) {
	d.y += 6
	d.text(16, d.y, 13, "normal", fmt.Sprintf("Speculative round (%s): the draft %s proposed %d tokens; %d kept", s.Phase, s.Draft, len(s.Proposals), s.Accepted))
	for i, p := range s.Proposals {
		d.y += 18
		line := fmt.Sprintf("guess %d %s: q %s", i+1, p.Token.Piece, pct(p.Q))
		if s.reached("verify") && p.Verdict != "unchecked" {
			line += fmt.Sprintf(", p %s, p/q %s", pct(p.P), f(p.Ratio()))
		}
		if s.reached("accept") {
			if p.HasU {
				line += fmt.Sprintf(", u %.4f", p.U)
			}
			line += " — " + verdictMark(p.Verdict)
		}
		d.text(24, d.y, 12, "normal", line)
	}
	if s.reached("accept") {
		d.y += 20
		how := "resampled from the residual max(0, p − q)"
		if s.Bonus {
			how = "a bonus token from the target"
		}
		d.text(16, d.y, 13, "bold", fmt.Sprintf("then %s: %s — %d tokens from one target pass", s.Next.Piece, how, s.Emitted))
	}
	if s.reached("rollback") {
		d.y += 20
		d.text(16, d.y, 12, "normal", fmt.Sprintf("rolled back: target %d rows, draft %d rows; measured: draft %.3f ms, verify %.3f ms", s.RolledBack, s.DraftDropped, s.DraftMS, s.VerifyMS))
	}
}

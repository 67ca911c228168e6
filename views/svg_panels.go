package views

import (
	"fmt"
	"html"
	"math"
)

// The handout drawing of each stage's panel (StageSVG draws the title,
// caption and footer around it).
func (p *TokenizePanel) svg(d *svgDoc) {
	d.y += 20
	d.text(16, d.y, 13, "normal", "Text: "+p.Text)
	cx := 16
	d.y += 16
	for _, t := range p.Tokens {
		label := t.Bytes + " " + id32(t.ID)
		w := 8*len([]rune(label)) + 12
		if cx+w > svgW-16 {
			cx, d.y = 16, d.y+34
		}
		fmt.Fprintf(&d.b, `<rect x="%d" y="%d" width="%d" height="26" rx="4" fill="#eef" stroke="#336"/>`, cx, d.y, w)
		d.text(cx+6, d.y+18, 13, "normal", label)
		cx += w + 6
	}
	d.y += 30
}

func (p *EmbedPanel) svg(d *svgDoc) {
	d.y += 6
	d.text(16, d.y, 12, "normal", "Each row is a token's input vector (blue negative, orange positive).")
	for _, r := range p.Rows {
		d.strip(r)
	}
}

func (a *AttentionPanel) svg(d *svgDoc) {
	d.y += 6
	kind := "weights after softmax (rows sum to 1)"
	if a.ShowScores {
		kind = "scaled scores before softmax"
	}
	d.text(16, d.y, 13, "normal", fmt.Sprintf("Layer %d of %d, head %d of %d: %s", a.Layer+1, a.Layers, a.Head+1, a.Heads, kind))
	top := d.y + 90
	cell := min(26, (svgW-200)/max(1, len(a.KeyLabels)))
	for j, k := range a.KeyLabels {
		fmt.Fprintf(&d.b, `<text x="%d" y="%d" font-size="11" transform="rotate(-60 %d %d)">%s</text>`, 170+cell*j, top-4, 170+cell*j, top-4, html.EscapeString(k))
	}
	for i, row := range a.Cells {
		y := top + cell*i
		d.text(16, y+cell-8, 11, "normal", a.QueryLabels[i])
		for j, v := range row {
			fmt.Fprintf(&d.b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`, 160+cell*j, y, cell-1, cell-1, seqHeat(v, a.Min, a.Max))
			if cell >= 22 && !math.IsNaN(float64(v)) && !a.ShowScores {
				fmt.Fprintf(&d.b, `<text x="%d" y="%d" font-size="8" fill="#fff">%.2f</text>`, 160+cell*j+2, y+cell-8, v)
			}
		}
		if i == a.Current {
			fmt.Fprintf(&d.b, `<rect x="159" y="%d" width="%d" height="%d" fill="none" stroke="#000" stroke-width="2"/>`, y-1, cell*len(row)+1, cell+1)
		}
	}
	d.y = top + cell*len(a.Cells) + 10
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
	d.text(16, d.y, 13, "normal", fmt.Sprintf("Probabilities BEFORE sampling: softmax at temperature %s (sum over %d tokens %s)", fx(s.Temperature), s.Vocab, f(s.Sum)))
	d.bars(s.Top, func(b Bar) string { return "p " + pct(b.Value) }, func(Bar) string { return "#d08a2c" })
	d.y += 20
	d.text(16, d.y, 12, "normal", fmt.Sprintf("%d more tokens share %s", s.Rest, pct(s.RestP)))
}

func (s *SamplerPanel) svg(d *svgDoc) {
	d.y += 6
	state := fmt.Sprintf("kept %d of %d", s.After, s.Before)
	if s.Skipped {
		state = "skipped at this setting"
	}
	d.text(16, d.y, 13, "normal", fmt.Sprintf("Sampler step %d of %d: %s %s — %s; AFTER this step, renormalised", s.Index+1, s.Count, s.Name, s.Setting, state))
	d.bars(s.Kept, func(b Bar) string { return "p " + pct(b.Value) }, func(Bar) string { return "#5a9a4a" })
	if len(s.Removed) > 0 {
		d.y += 24
		d.text(16, d.y, 13, "bold", fmt.Sprintf("Removed (%d)", s.RemovedCount))
		d.bars(s.Removed, func(b Bar) string { return "p was " + pct(b.Value) }, func(Bar) string { return "#bbb" })
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
	d.text(16, d.y, 13, "normal", fmt.Sprintf("KV cache: appended %d positions to each of %d layers; %d of %d positions cached, %d bytes used (%d per position per layer); %d read, not recomputed",
		k.Appended, len(k.Layers), k.Len, k.Capacity, k.BytesUsed, k.RowBytes, k.Saved))
	for _, l := range k.Layers {
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

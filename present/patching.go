package present

import (
	"stepthrough/engine"
	"stepthrough/engine/tokenizer"
	"stepthrough/views"
)

// Patching is activation patching's grid for the page: each position's
// token in both prompts, and each layer's share of the clean lead
// restored.
func Patching(tk *tokenizer.Tokenizer, p *engine.Patching, clean, corrupt []int32) *views.PatchView {
	q := func(id int32) string { return views.PieceLabel(tk.Display(id)) }
	v := &views.PatchView{Good: q(p.Good), Bad: q(p.Bad), CleanDiff: p.CleanDiff, CorruptDiff: p.CorruptDiff}
	for i := range clean {
		v.Positions = append(v.Positions, views.PatchPos{Pos: i, Clean: q(clean[i]), Corrupt: q(corrupt[i]), Differs: clean[i] != corrupt[i]})
	}
	for l, row := range p.Restored {
		v.Rows = append(v.Rows, views.PatchRow{Layer: l + 1, Cells: row})
		v.Passes += len(row)
	}
	v.Passes += 2 // the clean and the corrupted runs
	return v
}

// PatchingForm is the Patching page's form: the offered models, the one
// chosen, the two prompts (both empty: a clean and a corrupted prompt
// that differ in one word) and their limit in characters.
func PatchingForm(models []string, model, clean, corrupt string, maxPrompt int) views.PatchingPage {
	p := views.PatchingPage{Models: models, Model: model, Clean: clean, Corrupt: corrupt, MaxPrompt: maxPrompt}
	if p.Clean == "" && p.Corrupt == "" {
		p.Clean, p.Corrupt = "The capital of France is", "The capital of Japan is"
	}
	return p
}

package present

import (
	"cmp"
	"slices"

	"stepthrough/engine/model"
	"stepthrough/engine/sample"
	"stepthrough/engine/tokenizer"
	"stepthrough/views"
)

// FamiliesTop is how many next-token candidates a families page's side
// shows.
const FamiliesTop = 8

// FamilyRun is one side of the families page as the engine ran it: the
// model's name, label and backend, the prompt's tokens and the logits
// after them.
type FamilyRun struct {
	Model, Label, Backend string
	Tokens                []tokenizer.Token
	Logits                []float32
}

// FamilySide is a families page's side: the prompt's tokens, the next
// token's most likely candidates (one 0–100 % scale for every bar, both
// sides) and the model's features.
func FamilySide(m *model.Model, r FamilyRun) views.FamilySide {
	tk := m.Tokenizer
	side := views.FamilySide{Model: r.Model, Label: r.Label, Backend: r.Backend}
	for _, t := range r.Tokens {
		side.Tokens = append(side.Tokens, views.FamilyToken{ID: t.ID, Piece: views.PieceLabel(tk.Display(t.ID)), Added: t.Added})
	}
	probs := sample.Probabilities(r.Logits, 1)
	for _, id := range sample.TopN(probs, FamiliesTop) {
		side.Top = append(side.Top, views.Bar{ID: id, Piece: views.PieceLabel(tk.Display(id)), Value: float64(probs[id]), Width: 100 * float64(probs[id])})
	}
	for _, f := range m.Features() {
		side.Features = append(side.Features, views.FamilyFeature{MapFeature: views.MapFeature{Key: f.Key, Name: f.Name, Why: f.Why}})
	}
	return side
}

// CompareFamilies marks what p's two sides do not share: each side's
// features the other lacks, and whether both cut the prompt into the
// same pieces.
func CompareFamilies(p *views.FamiliesPage) {
	for i := range p.Sides {
		other := p.Sides[1-i].Features
		for j, f := range p.Sides[i].Features {
			p.Sides[i].Features[j].Only = !slices.ContainsFunc(other, func(g views.FamilyFeature) bool { return g.Key == f.Key })
		}
	}
	p.SameTokenizer = slices.EqualFunc(p.Sides[0].Tokens, p.Sides[1].Tokens, func(x, y views.FamilyToken) bool { return x.Piece == y.Piece })
}

// FamiliesDefaultPrompt is the families page's prompt until the viewer
// writes one.
const FamiliesDefaultPrompt = "Once upon a time, there was a little"

// FamiliesForm is the families page's form: the offered models, the two
// chosen and the prompt (empty: the default one).
func FamiliesForm(models []string, a, b, prompt string) views.FamiliesPage {
	return views.FamiliesPage{Models: models, A: a, B: b, Prompt: cmp.Or(prompt, FamiliesDefaultPrompt)}
}

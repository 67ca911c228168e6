package present

import (
	"context"
	"slices"
	"testing"

	"stepthrough/engine/sample"
	"stepthrough/models/modelstest"
	"stepthrough/session"
)

// Each example prompt's claim about its first next-token distribution
// holds on the lesson model (probabilities at T = 1 from the engine).
func TestExamplesHoldOnTheModel(t *testing.T) {
	reg := modelstest.Lesson(t)
	for _, x := range examples {
		se := session.New("x", "", reg)
		if err := se.Run(context.Background(), run(x.prompt)); err != nil {
			t.Fatal(err)
		}
		p := sample.Probabilities(snapOf(se).Cursor.Steps[0].Logits.Logits, 1)
		top := float64(slices.Max(p))
		if top < x.lo || top > x.hi {
			t.Errorf("%q: the top token has p %.3f at T = 1; the page says %q", x.prompt, top, x.why)
		}
		se.Close()
	}
}

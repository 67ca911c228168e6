package quantlens

import (
	"context"
	"testing"

	"stepthrough/engine"
	"stepthrough/engine/model"
	"stepthrough/models/modelstest"
)

func lessonV3(t *testing.T) *model.Model {
	t.Helper()
	m, err := modelstest.Lesson(t).Get("lesson-v3.gguf")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The copying lesson model's mechanism survives each type, measured as
// the lessons measure it (20 random tokens read twice, 8 sequences, seed
// 1): its two induction heads stay the top two (measured: L4H3 0.923 as
// stored, 0.922 at Q8_0, 0.917 at Q4_K_M, 0.908 at Q4_0; L4H1 0.816,
// 0.819, 0.795, 0.777) and it still copies (148, 148, 149 and 148 of 152
// repeated tokens).
func TestMechanismUnderEachType(t *testing.T) {
	m := lessonV3(t)
	seqs, err := engine.RepeatedRandom(m.Tokenizer, m.Config.Vocab, 20, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	measure := func(m *model.Model) *Mechanism {
		mech, err := MeasureMechanism(context.Background(), load(t, m, "cpu"), seqs)
		if err != nil {
			t.Fatal(err)
		}
		return mech
	}
	base := measure(m)
	for _, target := range []string{"F32", "Q8_0", "Q4_K_M", "Q4_0"} {
		mech := base
		if target != "F32" {
			mech = measure(convert(t, m, target))
		}
		t.Logf("%s: top heads %v; copied %d of %d (%.3f)", target, mech.Heads[:3], mech.Copied, mech.Total, mech.CopyRate())
		if h := mech.Heads; h[0].Head != "L4H3" || h[1].Head != "L4H1" || h[1].Induction < 0.75 {
			t.Errorf("%s: the induction heads are %v, want L4H3 and L4H1 above 0.75", target, h[:2])
		}
		if mech.CopyRate() < 0.95 {
			t.Errorf("%s: copies %.3f of the repeated tokens, want at least 0.95", target, mech.CopyRate())
		}
	}
}

package verify

import (
	"context"
	"fmt"

	"stepthrough/engine"
	"stepthrough/engine/intervene"
	"stepthrough/lessons"
	"stepthrough/session"
)

// The mechanism claims measure the step's model directly, as `stepthrough
// heads` and the patching page do: head scores and copying on random
// repeated sequences, and activation patching.

// Head scores and copying read HeadSeqs random sequences of HeadSeqLen
// tokens drawn with seed HeadSeed, each read twice (`heads`' defaults).
const HeadSeqLen, HeadSeqs, HeadSeed = 20, 8, 1

// loaded is the step's model on the CPU (the backend that applies
// interventions) and the repeated sequences the head claims read.
func (s *checker) loaded() (*engine.Loaded, [][]int32, error) {
	lm, err := s.se.Engines().Engine(s.Run.Model, "cpu")
	if err != nil {
		return nil, nil, err
	}
	seqs, err := engine.RepeatedRandom(lm.Model.Tokenizer, lm.Model.Config.Vocab, HeadSeqLen, HeadSeqs, HeadSeed)
	return lm, seqs, err
}

// checkInduction checks a head's induction score.
func (s *checker) checkInduction(ctx context.Context, c lessons.Claim) (string, error) {
	set, err := intervene.Parse(c.Head)
	if err != nil || len(set.Edits) != 1 || set.Edits[0].Site != intervene.Head {
		return "", fmt.Errorf("%q is not a head", c.Head)
	}
	e := set.Edits[0]
	lm, seqs, err := s.loaded()
	if err != nil {
		return "", err
	}
	if cfg := lm.Model.Config; e.Layer >= cfg.Layers || e.Index >= cfg.Heads {
		return "", fmt.Errorf("the model has %d layers of %d heads", cfg.Layers, cfg.Heads)
	}
	hs, err := lm.ScoreHeads(ctx, seqs)
	if err != nil {
		return "", err
	}
	got := hs.Induction[e.Layer][e.Index]
	return fmt.Sprintf("%.3f", got), want(c.Holds(got), "%s's induction score is %.3f", c.Head, got)
}

// checkCopying checks how often the repeated half is copied, with the
// step's interventions read as the Explorer reads them (session.RunEdits:
// its mean ablation and steering included).
func (s *checker) checkCopying(ctx context.Context, c lessons.Claim) (string, error) {
	lm, seqs, err := s.loaded()
	if err != nil {
		return "", err
	}
	edits, err := session.RunEdits(ctx, lm, s.Run.Interventions())
	if err != nil {
		return "", err
	}
	hits, total, err := lm.CopyCount(ctx, seqs, edits)
	if err != nil {
		return "", err
	}
	got := float64(hits) / float64(total)
	return fmt.Sprintf("%.3f", got), want(c.Holds(got), "%d of %d repeated tokens copied (%.3f)", hits, total, got)
}

// checkRestores runs activation patching from the step's prompt (clean)
// into the claim's (corrupted) and checks one cell of its grid.
func (s *checker) checkRestores(ctx context.Context, c lessons.Claim) (string, error) {
	lm, _, err := s.loaded()
	if err != nil {
		return "", err
	}
	tk := lm.Model.Tokenizer
	clean, corrupt := s.Prompt, tk.EncodeIDs(c.Text, true)
	if s.Run.Special {
		corrupt = tk.EncodeSpecial(c.Text, true)
	}
	p, err := lm.Patch(ctx, clean, corrupt)
	if err != nil {
		return "", err
	}
	if c.Block > len(p.Restored) || c.Pos >= len(clean) {
		return "", fmt.Errorf("layer %d, position %d: the grid is %d layers × %d positions (0 to %d)", c.Block, c.Pos, len(p.Restored), len(clean), len(clean)-1)
	}
	got := p.Restored[c.Block-1][c.Pos]
	return fmt.Sprintf("%.3f", got), want(c.Holds(got), "patching layer %d at position %d restores %.3f of %q's lead over %q", c.Block, c.Pos, got, tk.Display(p.Good), tk.Display(p.Bad))
}

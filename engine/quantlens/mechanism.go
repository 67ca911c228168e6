package quantlens

import (
	"context"

	"stepthrough/engine"
)

// Mechanism is whether copying survives a weight type, measured as
// `stepthrough heads` and the lessons measure it: every head's induction
// score on random repeated sequences (engine.ScoreHeads) and how much of
// the repeated half the model copies (engine.CopyCount).
type Mechanism struct {
	Heads         []engine.HeadScore // the highest induction score first
	Copied, Total int
}

// CopyRate is the share of the repeated tokens copied.
func (m *Mechanism) CopyRate() float64 { return float64(m.Copied) / float64(max(1, m.Total)) }

// MeasureMechanism scores l's heads and copying on seqs
// (engine.RepeatedRandom's form).
func MeasureMechanism(ctx context.Context, l *engine.Loaded, seqs [][]int32) (*Mechanism, error) {
	hs, err := l.ScoreHeads(ctx, seqs)
	if err != nil {
		return nil, err
	}
	hits, total, err := l.CopyCount(ctx, seqs, nil)
	if err != nil {
		return nil, err
	}
	return &Mechanism{Heads: hs.List(), Copied: hits, Total: total}, nil
}

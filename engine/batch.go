package engine

import (
	"context"
	"fmt"

	"stepthrough/engine/cpu"
	"stepthrough/engine/hooks"
)

// BatchItem is one session's share of a batched pass: the tokens it adds
// at its next positions (one for a decode step; a prompt or a chunk of one
// for a prefill).
type BatchItem struct {
	Session *Session
	Tokens  []int32
}

// MaxBatch is the most tokens one batched pass of l takes.
func (l *Loaded) MaxBatch() int {
	if l.cpu != nil {
		return l.cpu.MaxBatch()
	}
	return 512
}

// Batch runs several sessions of l in one forward pass and puts each one's
// last-token logits in logits[i] (a buffer reused by that session's next
// pass). On the CPU the rows of every session go through each weight
// matrix together, so the weights are read once for the batch; each
// session keeps its own positions and KV cache, and its logits equal those
// of the same tokens run alone (up to float32 summation order: the batch
// tests bound it by 1e-5). On Vulkan the sessions run one after another.
// A batched pass calls no hooks and applies no edits: a session with
// edits (SetEdits) is refused. The sessions must be distinct and made by
// l.NewSession; on error no session has advanced.
func (l *Loaded) Batch(ctx context.Context, items []BatchItem, logits [][]float32) error {
	if len(logits) != len(items) {
		return fmt.Errorf("batch: %d outputs for %d sessions", len(logits), len(items))
	}
	for i, it := range items {
		if it.Session != nil && it.Session.edits != nil {
			return fmt.Errorf("batch: session %d has interventions, which a batched pass does not apply: run it alone", i)
		}
	}
	if l.cpu == nil {
		return l.batchInTurn(ctx, items, logits)
	}
	seqs := make([]cpu.Seq, len(items))
	for i, it := range items {
		if it.Session == nil {
			return fmt.Errorf("batch: session %d is missing", i)
		}
		b, ok := unwrap(it.Session.backend).(cpuBackend)
		if !ok || b.Runner.Loaded() != l.cpu {
			return fmt.Errorf("batch: session %d was not made by this loaded model", i)
		}
		seqs[i] = cpu.Seq{Runner: b.Runner, Tokens: it.Tokens}
	}
	if err := l.cpu.ForwardBatch(ctx, seqs, logits); err != nil {
		return err
	}
	for i := range logits {
		if !finite(logits[i]) { // a pass no session keeps, as on error
			for _, it := range items {
				it.Session.backend.Truncate(len(it.Session.tokens))
			}
			return fmt.Errorf("batch: session %d: %w", i, &NonFiniteError{Layer: -1, After: "output", Pos: items[i].Session.Pos() + len(items[i].Tokens) - 1, NaN: hasNaN(logits[i])})
		}
	}
	for _, it := range items {
		it.Session.tokens = append(it.Session.tokens, it.Tokens...)
	}
	return nil
}

// batchInTurn is Batch for backends without batched passes: each session
// in turn. A failure rolls back the sessions already run.
func (l *Loaded) batchInTurn(ctx context.Context, items []BatchItem, logits [][]float32) error {
	for i, it := range items {
		if it.Session == nil || unwrap(it.Session.backend) == nil {
			return fmt.Errorf("batch: session %d is missing", i)
		}
		for j := range i {
			if items[j].Session == it.Session {
				return fmt.Errorf("batch: sessions %d and %d are the same", j, i)
			}
		}
	}
	for i, it := range items {
		out, err := it.Session.Eval(hooks.Without(context.WithoutCancel(ctx)), it.Tokens)
		if err != nil {
			for _, done := range items[:i] {
				done.Session.Truncate(done.Session.Pos() - len(done.Tokens))
			}
			return fmt.Errorf("batch: session %d: %w", i, err)
		}
		logits[i] = out
	}
	return nil
}

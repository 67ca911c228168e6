package cpu

import (
	"context"
	"errors"
	"fmt"

	"stepthrough/engine/kv"
	"stepthrough/engine/model"
)

// Seq is one sequence's share of a batched pass: the runner whose cache it
// extends and the tokens it adds at that runner's next positions (one for
// a decode step, many for a prompt or a chunk of one).
type Seq struct {
	Runner *Runner
	Tokens []int32
	All    bool // every token's logits, not only the last one's
}

// MaxBatch is the most tokens one pass of l takes (Options.MaxBatch).
func (l *Loaded) MaxBatch() int { return l.f.batch }

// ForwardBatch runs several sequences in one pass: their token rows go
// through every weight matrix together (each matrix is read once for the
// whole batch, which is why decoding B sequences costs far less than B
// passes), while each row's RoPE, KV-cache append and attention use its
// own sequence's positions and cache. out[i] receives sequence i's
// logits: its runner's reused last-token buffer, or a new len(Tokens)×vocab
// slice when All. A sequence's logits equal those of the same tokens run
// alone through its runner (up to float32 summation order).
//
// Batched passes carry no hooks (a hook describes one sequence). The total
// tokens must fit in MaxBatch; a runner may appear once. On any error no
// cache is changed.
func (l *Loaded) ForwardBatch(ctx context.Context, seqs []Seq, out [][]float32) error {
	if len(seqs) == 0 {
		return errors.New("forward batch: no sequences")
	}
	if len(out) != len(seqs) {
		return fmt.Errorf("forward batch: %d outputs for %d sequences", len(out), len(seqs))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return model.ErrClosed
	}
	f := l.f
	if err := f.plan(seqs); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tokens := f.hk.tokens[:0] // the rows in order (a buffer only the hooks share, and a batch has none)
	for i, s := range seqs {
		tokens = append(tokens, s.Tokens...)
		out[i] = f.segs[i].out
	}
	f.hk.tokens = tokens
	f.h, f.iv = nil, nil // a batch is watched and edited by no one
	f.run(tokens)
	f.dropSegs()
	return nil
}

// plan checks a batch and lays its sequences out as the chunk's segments.
func (f *fwd) plan(seqs []Seq) error {
	f.dropSegs()
	total := 0
	for i, s := range seqs {
		if s.Runner == nil || s.Runner.l.f != f {
			return fmt.Errorf("forward batch: sequence %d is not a runner of this model", i)
		}
		if len(s.Tokens) == 0 {
			return fmt.Errorf("forward batch: sequence %d has no tokens", i)
		}
		for j := range i {
			if seqs[j].Runner == s.Runner {
				return fmt.Errorf("forward batch: sequences %d and %d are the same runner", j, i)
			}
		}
		for k, id := range s.Tokens {
			if id < 0 || int(id) >= f.cfg.Vocab {
				return fmt.Errorf("forward batch: sequence %d: token %d (at %d) is outside the vocabulary of %d", i, id, k, f.cfg.Vocab)
			}
		}
		c := s.Runner.cache
		if c.Len()+len(s.Tokens) > c.Cap() {
			return fmt.Errorf("forward batch: sequence %d: %d tokens at position %d: %w (%d positions)", i, len(s.Tokens), c.Len(), kv.ErrContextFull, c.Cap())
		}
		total += len(s.Tokens)
	}
	if total > f.batch {
		return fmt.Errorf("forward batch: %d tokens in all, over the %d one pass takes", total, f.batch)
	}
	for i, s := range seqs {
		if err := s.Runner.cache.Reserve(s.Runner.cache.Len() + len(s.Tokens)); err != nil {
			for _, u := range seqs[:i+1] { // give back what was reserved (a pool's blocks)
				u.Runner.cache.Truncate(u.Runner.cache.Len())
			}
			return fmt.Errorf("forward batch: sequence %d: %w", i, err)
		}
	}
	row := 0
	for _, s := range seqs {
		sg := seg{cache: s.Runner.cache, row0: row, pos0: s.Runner.cache.Len(), n: len(s.Tokens), want: true, all: s.All, out: s.Runner.logits}
		if s.All {
			sg.out = make([]float32, len(s.Tokens)*f.cfg.Vocab)
		}
		f.segs = append(f.segs, sg)
		row += len(s.Tokens)
	}
	return nil
}

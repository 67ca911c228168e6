package engine

import (
	"errors"
	"fmt"

	"stepthrough/engine/kv"
)

// NewKVPool makes a paged KV memory for l's sessions: blocks of blockSize
// positions (see kv.Pool). Paged sessions run on the CPU backend.
func (l *Loaded) NewKVPool(blockSize, blocks int) (*kv.Pool, error) {
	if l.cpu == nil {
		return nil, errors.New("paged KV cache: runs on the CPU backend only")
	}
	c := l.Model.Config
	return kv.NewPool(c.Layers, c.KVDim(), blockSize, blocks)
}

// NewPagedSession starts an empty session on l whose KV cache is a block
// table in pool (made by l.NewKVPool), of at most ctx positions (0: the
// most l allows). It takes blocks as positions fill; Close gives them back.
func (l *Loaded) NewPagedSession(pool *kv.Pool, ctx int) (*Session, error) {
	if l.cpu == nil {
		return nil, errors.New("paged KV cache: runs on the CPU backend only")
	}
	r, err := l.cpu.NewPagedRunner(pool, ctx)
	if err != nil {
		return nil, err
	}
	return &Session{Model: l.Model, backend: cpuBackend{r}, info: l.info}, nil
}

// paged is the session's paged cache, or nil.
func (s *Session) paged() *kv.Paged {
	if b, ok := unwrap(s.backend).(cpuBackend); ok {
		p, _ := b.Runner.Cache().(*kv.Paged)
		return p
	}
	return nil
}

// SharePrefix starts an empty paged session in scope (kv.ScopeOf) with
// the full prefix blocks that sessions of the same scope have registered
// for the same first tokens of prompt (never all of it). It returns how
// many of prompt's tokens are now in the cache; the session continues
// after them, and RegisterPrefix offers its blocks in the same scope.
func (s *Session) SharePrefix(scope kv.Hash, prompt []int32) (int, error) {
	p := s.paged()
	if p == nil {
		return 0, fmt.Errorf("share prefix: the session's KV cache is not paged")
	}
	p.SetScope(scope)
	n := p.SharePrefix(prompt)
	s.tokens = append(s.tokens[:0], prompt[:n]...)
	return n, nil
}

// RegisterPrefix offers the session's full KV blocks to later sessions
// that start with the same tokens (a no-op for a contiguous cache).
func (s *Session) RegisterPrefix() {
	if p := s.paged(); p != nil {
		p.Register(s.tokens)
	}
}

// KVBlocks is the number of pool blocks the session holds (0 when its
// cache is contiguous).
func (s *Session) KVBlocks() int {
	if p := s.paged(); p != nil {
		return p.Blocks()
	}
	return 0
}

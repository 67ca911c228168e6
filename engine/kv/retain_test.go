package kv

import (
	"slices"
	"testing"
)

// fillTokens appends n positions whose rows are a function of the tokens
// (so a block reused for a prefix can be checked against a fresh one).
func fillTokens(t *testing.T, c *Paged, layers, dim int, tokens []int32) {
	t.Helper()
	from := c.Len()
	if err := c.Reserve(len(tokens)); err != nil {
		t.Fatal(err)
	}
	for p := from; p < len(tokens); p++ {
		for l := range layers {
			v := float32(tokens[p]*100 + int32(l))
			c.Put(l, p, row(dim, v), row(dim, -v))
		}
	}
	c.SetLen(len(tokens))
	c.Register(tokens)
}

// A retaining pool keeps an ended sequence's full blocks, findable by
// their tokens from position 0; a later sequence takes them back (the
// same rows), and blocks are reused coldest first when nothing is free.
func TestRetainedPrefixBlocks(t *testing.T) {
	const layers, dim, bs = 2, 3, 4
	pool, _ := NewPool(layers, dim, bs, 6)
	pool.Retain = true
	sys := []int32{1, 2, 3, 4, 5, 6, 7, 8} // two full blocks
	a, _ := pool.NewPaged(64)
	fillTokens(t, a, layers, dim, append(slices.Clone(sys), 9, 10))
	wantK, wantV := gather(a, 1, 8, dim)
	a.Free()
	if got := pool.Cached(); got != 2 {
		t.Fatalf("%d blocks retained after the sequence ended, want its 2 full ones", got)
	}
	if got := pool.Free(); got != 6 {
		t.Errorf("Free = %d, want all 6 (retained blocks can be taken)", got)
	}

	b, _ := pool.NewPaged(64)
	if got := b.SharePrefix(append(slices.Clone(sys), 11)); got != 8 {
		t.Fatalf("a later prompt with the same 8 first tokens shared %d positions", got)
	}
	if k, v := gather(b, 1, 8, dim); !slices.Equal(k, wantK) || !slices.Equal(v, wantV) {
		t.Error("the revived blocks' rows differ from the ones computed")
	}
	if st := pool.Stats(); st.Hits != 2 || st.Revived != 2 || st.Evictions != 0 {
		t.Errorf("stats %+v, want 2 hits, both revived", st)
	}
	b.Free()

	// Same second block's tokens after a different first block: no match
	// (the hash covers every token from position 0).
	c, _ := pool.NewPaged(64)
	if got := c.SharePrefix([]int32{9, 9, 9, 9, 5, 6, 7, 8, 1}); got != 0 {
		t.Errorf("a prompt differing in its first block shared %d positions", got)
	}
	c.Free()

	// Fill the pool with other tokens: the retained blocks go, coldest
	// first, and are no longer found.
	d, _ := pool.NewPaged(64)
	fillTokens(t, d, layers, dim, []int32{20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40})
	if got := pool.Stats().Evictions; got != 2 {
		t.Errorf("%d evictions, want 2 (the pool has 6 blocks, 4 were free)", got)
	}
	d.Free()
	e, _ := pool.NewPaged(64)
	if got := e.SharePrefix(append(slices.Clone(sys), 11)); got != 0 {
		t.Errorf("an evicted prefix was still found (%d positions)", got)
	}
	e.Free()
}

// The least recently released block is the first evicted.
func TestRetainedEvictsLeastRecentlyUsed(t *testing.T) {
	const layers, dim, bs = 1, 1, 2
	pool, _ := NewPool(layers, dim, bs, 4)
	pool.Retain = true
	for _, first := range []int32{10, 20, 30} { // three one-block prompts, released in order
		s, _ := pool.NewPaged(8)
		fillTokens(t, s, layers, dim, []int32{first, first + 1, first + 2})
		s.Truncate(2) // keep only the full block
		s.Free()
	}
	touch, _ := pool.NewPaged(8) // revive 10's block: now the hottest
	if touch.SharePrefix([]int32{10, 11, 12}) != 2 {
		t.Fatal("block 10 not found")
	}
	touch.Free()
	n, _ := pool.NewPaged(8)
	if err := n.Reserve(4); err != nil { // the free block, then the coldest retained: 20's
		t.Fatal(err)
	}
	n.Free()
	for _, tc := range []struct {
		first int32
		want  int
	}{{10, 2}, {20, 0}, {30, 2}} {
		s, _ := pool.NewPaged(8)
		if got := s.SharePrefix([]int32{tc.first, tc.first + 1, tc.first + 2}); got != tc.want {
			t.Errorf("prompt from %d: shared %d, want %d", tc.first, got, tc.want)
		}
		s.Free()
	}
}

// A sequence that truncates into one of its named blocks and writes new
// rows there makes the block unfindable: no later prompt gets the old
// tokens' name with the new rows.
func TestRewrittenBlockIsForgotten(t *testing.T) {
	const layers, dim, bs = 1, 2, 4
	pool, _ := NewPool(layers, dim, bs, 8)
	pool.Retain = true
	a, _ := pool.NewPaged(64)
	fillTokens(t, a, layers, dim, []int32{1, 2, 3, 4, 5})
	a.Truncate(2)
	fillTokens(t, a, layers, dim, []int32{1, 2, 7, 7, 5})
	b, _ := pool.NewPaged(64)
	got := b.SharePrefix([]int32{1, 2, 3, 4, 5})
	if got != 0 {
		t.Errorf("a prompt matching the overwritten tokens shared %d positions", got)
	}
	if got := b.SharePrefix([]int32{1, 2, 7, 7, 5}); got != 0 && got != 4 {
		t.Errorf("shared %d", got)
	}
	a.Free()
	b.Free()
	c, _ := pool.NewPaged(64)
	if got := c.SharePrefix([]int32{1, 2, 7, 7, 9}); got != 4 {
		t.Errorf("the rewritten block, registered again, shared %d positions, want 4", got)
	}
	c.Free()
}

// Blocks are shared only within a scope: a prompt registered in one is
// found from the same scope, live or retained, and from no other (the
// default zero scope included), whatever the tokens; a fork keeps its
// scope.
func TestPrefixScopes(t *testing.T) {
	const layers, dim, bs = 1, 2, 4
	sys := []int32{1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, tc := range []struct {
		name       string
		registered string // the scope the first sequence ran in
		asked      string
		want       int
	}{
		{"same scope", "client A", "client A", 8},
		{"another scope", "client A", "client B", 0},
		{"the default scope asks", "client A", "", 0},
		{"asks the default scope", "", "client B", 0},
		{"both default", "", "", 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, retained := range []bool{false, true} {
				pool, _ := NewPool(layers, dim, bs, 8)
				pool.Retain = true
				a, _ := pool.NewPaged(64)
				a.SetScope(ScopeOf(tc.registered))
				fillTokens(t, a, layers, dim, sys)
				if retained {
					a.Free()
				}
				b, _ := pool.NewPaged(64)
				b.SetScope(ScopeOf(tc.asked))
				if got := b.SharePrefix(sys); got != tc.want {
					t.Errorf("retained %v: shared %d positions, want %d", retained, got, tc.want)
				}
			}
		})
	}
	pool, _ := NewPool(layers, dim, bs, 8)
	a, _ := pool.NewPaged(64)
	a.SetScope(ScopeOf("client A"))
	fillTokens(t, a, layers, dim, sys[:4])
	f := a.Fork()
	fillTokens(t, f, layers, dim, sys) // its second block registered from the fork
	b, _ := pool.NewPaged(64)
	b.SetScope(ScopeOf("client A"))
	if got := b.SharePrefix(sys); got != 8 {
		t.Errorf("a fork's blocks: shared %d positions in its scope, want 8", got)
	}
}

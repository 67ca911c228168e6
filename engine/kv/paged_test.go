package kv

import (
	"errors"
	"slices"
	"testing"
)

func row(dim int, v float32) []float32 {
	r := make([]float32, dim)
	for i := range r {
		r[i] = v + float32(i)/100
	}
	return r
}

// fill appends n positions whose rows are numbered from their position.
func fill(t *testing.T, c Store, layers, dim, n int) {
	t.Helper()
	from := c.Len()
	if err := c.Reserve(from + n); err != nil {
		t.Fatal(err)
	}
	for p := from; p < from+n; p++ {
		for l := range layers {
			c.Put(l, p, row(dim, float32(p*10+l)), row(dim, -float32(p*10+l)))
		}
	}
	c.SetLen(from + n)
}

// A paged cache holds exactly what a contiguous one holds, takes blocks as
// it grows, gives them back when truncated and freed, and reports a
// full pool without corrupting anything.
func TestPagedEqualsContiguous(t *testing.T) {
	const layers, dim = 3, 4
	pool, err := NewPool(layers, dim, 4, 8)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := New(layers, 32, dim)
	p, _ := pool.NewPaged(32)
	for _, n := range []int{1, 5, 3, 9} {
		fill(t, c, layers, dim, n)
		fill(t, p, layers, dim, n)
	}
	if p.Len() != 18 || p.Blocks() != 5 || pool.Free() != 3 {
		t.Fatalf("len %d, blocks %d, free %d; want 18, 5, 3", p.Len(), p.Blocks(), pool.Free())
	}
	for l := range layers {
		ck, cv := c.Rows(l, 0, 18)
		pk, pv := gather(p, l, 18, dim)
		if !slices.Equal(ck, pk) || !slices.Equal(cv, pv) {
			t.Fatalf("layer %d differs", l)
		}
	}
	p.Truncate(7)
	if p.Blocks() != 2 || pool.Free() != 6 {
		t.Errorf("after truncating to 7: %d blocks, %d free", p.Blocks(), pool.Free())
	}
	q, _ := pool.NewPaged(32)
	fill(t, q, layers, dim, 12) // 3 blocks: 3 left
	if err := p.Reserve(31); !errors.Is(err, ErrNoBlocks) {
		t.Errorf("over the pool: %v", err)
	}
	p.Truncate(p.Len())
	if p.Blocks() != 2 || pool.Free() != 3 {
		t.Errorf("a failed Reserve undone: %d blocks, %d free", p.Blocks(), pool.Free())
	}
	if err := p.Reserve(33); err == nil {
		t.Error("past the capacity: no error")
	}
	p.Free()
	q.Free()
	if pool.Free() != 8 || p.Len() != 0 {
		t.Errorf("after Free: %d free, len %d", pool.Free(), p.Len())
	}
	if _, err := NewPool(1, 1, 0, 1); err == nil {
		t.Error("block size 0 accepted")
	}
	if _, err := NewPool(1<<10, 1<<10, 1024, 1<<10); err == nil {
		t.Error("a pool over MaxBytes accepted")
	}
}

// gather reads layer l's rows [0, n) run by run, as attention does.
func gather(c Store, l, n, dim int) (k, v []float32) {
	for j := 0; j < n; {
		rk, rv := c.Rows(l, j, n)
		k, v = append(k, rk...), append(v, rv...)
		j += len(rk) / dim
	}
	return k, v
}

// Sequences that start alike share full prefix blocks (never the block of
// the last token), a fork shares everything, and a write into a shared
// block copies it first: the other sequence never sees the write.
func TestPrefixSharingAndCopyOnWrite(t *testing.T) {
	const layers, dim, bs = 2, 2, 4
	pool, _ := NewPool(layers, dim, bs, 16)
	tokens := []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	a, _ := pool.NewPaged(64)
	fill(t, a, layers, dim, len(tokens))
	a.Register(tokens)
	b, _ := pool.NewPaged(64)
	if got := b.SharePrefix(append(slices.Clone(tokens[:8]), 99, 98)); got != 8 {
		t.Fatalf("shared %d positions, want 8", got)
	}
	if pool.Used() != 3 {
		t.Errorf("%d blocks used, want 3 (two shared)", pool.Used())
	}
	c, _ := pool.NewPaged(64)
	if got := c.SharePrefix(tokens[:8]); got != 4 {
		t.Errorf("an 8-token prompt shared %d positions, want 4 (its last token must be computed)", got)
	}
	c.Free()
	d, _ := pool.NewPaged(64)
	if got := d.SharePrefix([]int32{1, 2, 3, 5, 5, 6, 7, 8, 9}); got != 0 {
		t.Errorf("a different first block shared %d positions", got)
	}
	d.Free()
	wantA, _ := gather(a, 1, 10, dim)
	f := a.Fork()
	f.Truncate(6) // into a shared block, then overwrite
	fill(t, f, layers, dim, 3)
	for p := 6; p < 9; p++ {
		f.Put(1, p, row(dim, 777), row(dim, 777))
	}
	if got, _ := gather(a, 1, 10, dim); !slices.Equal(got, wantA) {
		t.Error("a fork's write changed the original")
	}
	if got, _ := gather(f, 1, 6, dim); !slices.Equal(got, wantA[:6*dim]) {
		t.Error("the fork lost the rows it shares")
	}
	for _, s := range []*Paged{a, b, f} {
		s.Free()
	}
	if pool.Free() != 16 || len(pool.prefix) != 0 {
		t.Errorf("after every sequence ended: %d free, %d prefix keys", pool.Free(), len(pool.prefix))
	}
}

// Package kv is the key/value cache of a transformer: for every layer, the
// key and value vectors of every position processed so far, so a decode
// step attends over the past without recomputing it.
package kv

import "fmt"

// Store is one sequence's cache as a forward pass uses it: the contiguous
// Cache, or a Paged one whose rows live in blocks of a shared Pool.
type Store interface {
	Len() int
	Cap() int
	// Reserve makes positions [Len, n) writable (taking memory or blocks).
	Reserve(n int) error
	// Put writes position pos's key and value rows in layer l; pos was
	// reserved.
	Put(l, pos int, k, v []float32)
	SetLen(n int)
	Truncate(n int)
	// Rows returns layer l's keys and values from position j on, as far
	// as they lie together in memory and at most to position n; a reader
	// calls it again from where the run ended.
	Rows(l, j, n int) (k, v []float32)
	BytesAllocated() int
}

// MaxBytes caps one cache's memory (4 GiB).
const MaxBytes = 4 << 30

// Cache stores float32 K and V rows: per layer, up to Capacity rows of Dim
// values. Memory is taken as positions fill (Reserve), so a cache sized for
// a long context costs little until it is used.
type Cache struct {
	Layers, Capacity, Dim int
	k, v                  [][]float32
	n                     int // positions filled
}

// New makes an empty cache of capacity positions, refusing absurd sizes.
// It allocates rows only when Reserve asks for them.
func New(layers, capacity, dim int) (*Cache, error) {
	if layers < 1 || capacity < 1 || dim < 1 {
		return nil, fmt.Errorf("kv cache: invalid shape %d layers × %d positions × %d", layers, capacity, dim)
	}
	if b := int64(layers) * int64(capacity) * int64(dim) * 8; b > MaxBytes {
		return nil, fmt.Errorf("kv cache: %d layers × %d positions × %d values needs %d MiB, over the %d MiB limit", layers, capacity, dim, b>>20, MaxBytes>>20)
	}
	c := &Cache{Layers: layers, Capacity: capacity, Dim: dim, k: make([][]float32, layers), v: make([][]float32, layers)}
	return c, nil
}

// minRows is the smallest allocation Reserve makes, in positions.
const minRows = 16

// Reserve makes room for positions [0, n) in every layer, growing each
// layer's rows geometrically (so a decode loop allocates about log n
// times in all) and never past Capacity.
func (c *Cache) Reserve(n int) error {
	if n > c.Capacity {
		return fmt.Errorf("kv cache: %d positions requested, capacity %d", n, c.Capacity)
	}
	if len(c.k[0]) >= n*c.Dim {
		return nil
	}
	rows := max(minRows, len(c.k[0])/c.Dim)
	for rows < n {
		rows *= 2
	}
	rows = min(rows, c.Capacity)
	for l := range c.k {
		k := make([]float32, rows*c.Dim)
		v := make([]float32, rows*c.Dim)
		copy(k, c.k[l][:c.n*c.Dim])
		copy(v, c.v[l][:c.n*c.Dim])
		c.k[l], c.v[l] = k, v
	}
	return nil
}

// Len is the number of positions stored.
func (c *Cache) Len() int { return c.n }

// Cap is the number of positions the cache can hold.
func (c *Cache) Cap() int { return c.Capacity }

// Rows returns layer l's rows [j, n): a contiguous cache holds them in one run.
func (c *Cache) Rows(l, j, n int) (k, v []float32) {
	return c.k[l][j*c.Dim : n*c.Dim], c.v[l][j*c.Dim : n*c.Dim]
}

// Keys returns layer l's keys for positions [0, n) as one slice, n×Dim.
func (c *Cache) Keys(l, n int) []float32 { return c.k[l][:n*c.Dim] }

// Values is Keys for values.
func (c *Cache) Values(l, n int) []float32 { return c.v[l][:n*c.Dim] }

// Put writes the key and value rows of position pos in layer l.
func (c *Cache) Put(l, pos int, k, v []float32) {
	copy(c.k[l][pos*c.Dim:(pos+1)*c.Dim], k)
	copy(c.v[l][pos*c.Dim:(pos+1)*c.Dim], v)
}

// SetLen records that positions [0, n) are filled (after all layers were Put).
func (c *Cache) SetLen(n int) { c.n = n }

// Truncate forgets positions from n on.
func (c *Cache) Truncate(n int) {
	if n < c.n {
		c.n = max(n, 0)
	}
}

// BytesUsed is the memory holding filled positions; BytesAllocated the
// memory a full cache holds (what a contiguous cache sized for its
// capacity reserves); BytesHeld what this one has taken so far.
func (c *Cache) BytesUsed() int      { return c.n * c.Layers * c.Dim * 8 }
func (c *Cache) BytesAllocated() int { return c.Capacity * c.Layers * c.Dim * 8 }
func (c *Cache) BytesHeld() int      { return len(c.k[0]) * c.Layers * 8 }

// CopyFrom makes c hold the first n positions of src (same shape).
func (c *Cache) CopyFrom(src *Cache, n int) error {
	if src.Layers != c.Layers || src.Dim != c.Dim || n > src.n || n > c.Capacity {
		return fmt.Errorf("kv cache: cannot copy %d positions between caches of different shapes", n)
	}
	c.n = min(c.n, n)
	if err := c.Reserve(n); err != nil {
		return err
	}
	for l := range c.k {
		copy(c.k[l], src.k[l][:n*c.Dim])
		copy(c.v[l], src.v[l][:n*c.Dim])
	}
	c.n = n
	return nil
}

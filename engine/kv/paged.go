package kv

import (
	"errors"
	"fmt"
	"sync"
)

// ErrNoBlocks is returned when a pool has no free block left.
var ErrNoBlocks = errors.New("kv cache: no free block in the pool")

// ErrContextFull is returned, wrapped, by every backend when a pass would
// write past the cache's positions.
var ErrContextFull = errors.New("context is full")

// Pool is the paged KV memory of one model shared by many sequences
// (PagedAttention, Kwon et al. 2023): fixed-size blocks of BlockSize
// positions, each holding those positions' keys and values for every
// layer, handed out from a free list. A sequence's cache is a table of
// block numbers, so its memory grows a block at a time instead of being
// reserved for its longest possible reply, and sequences that start with
// the same tokens share their full prefix blocks (copy-on-write: a shared
// block is copied before anyone writes into it).
//
// A Pool is safe for concurrent use; each Paged cache belongs to one
// sequence.
type Pool struct {
	Layers, Dim, BlockSize, Blocks int

	mu     sync.Mutex
	data   []float32 // Blocks × Layers × 2 (K then V) × BlockSize × Dim
	refs   []int32   // sequences using each block
	free   []int32   // free block numbers (a stack)
	prefix map[prefixKey]int32
	keyOf  map[int32]prefixKey
}

// prefixKey names a full block by the block before it and its tokens, so
// equal keys mean equal token prefixes from position 0.
type prefixKey struct {
	parent int32
	tokens string
}

// NewPool makes a pool of blocks×blockSize positions for a model of the
// given shape, refusing absurd sizes (the whole pool is allocated now).
func NewPool(layers, dim, blockSize, blocks int) (*Pool, error) {
	if layers < 1 || dim < 1 || blockSize < 1 || blockSize > 1024 || blocks < 1 {
		return nil, fmt.Errorf("kv pool: invalid shape %d layers × %d values, %d blocks of %d positions", layers, dim, blocks, blockSize)
	}
	if b := int64(blocks) * int64(blockSize) * int64(layers) * int64(dim) * 8; b > MaxBytes {
		return nil, fmt.Errorf("kv pool: %d blocks of %d positions need %d MiB, over the %d MiB limit", blocks, blockSize, b>>20, MaxBytes>>20)
	}
	p := &Pool{Layers: layers, Dim: dim, BlockSize: blockSize, Blocks: blocks,
		data: make([]float32, blocks*layers*2*blockSize*dim), refs: make([]int32, blocks),
		prefix: map[prefixKey]int32{}, keyOf: map[int32]prefixKey{}}
	for b := blocks - 1; b >= 0; b-- {
		p.free = append(p.free, int32(b))
	}
	return p, nil
}

// BlockBytes is one block's memory.
func (p *Pool) BlockBytes() int { return p.Layers * 2 * p.BlockSize * p.Dim * 4 }

// Free is the number of free blocks.
func (p *Pool) Free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

// Used is the number of blocks in use (a shared block counts once).
func (p *Pool) Used() int { return p.Blocks - p.Free() }

// BlocksFor is how many blocks n positions take.
func (p *Pool) BlocksFor(n int) int { return (n + p.BlockSize - 1) / p.BlockSize }

func (p *Pool) alloc() (int32, error) {
	if len(p.free) == 0 {
		return 0, ErrNoBlocks
	}
	b := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	p.refs[b] = 1
	return b, nil
}

func (p *Pool) release(b int32) {
	p.refs[b]--
	if p.refs[b] > 0 {
		return
	}
	if k, ok := p.keyOf[b]; ok {
		delete(p.prefix, k)
		delete(p.keyOf, b)
	}
	p.free = append(p.free, b)
}

// layerRows is block b's K or V rows of layer l (kv 0: keys, 1: values).
func (p *Pool) layerRows(b int32, l, kv int) []float32 {
	n := p.BlockSize * p.Dim
	off := ((int(b)*p.Layers+l)*2 + kv) * n
	return p.data[off : off+n]
}

func (p *Pool) block(b int32) []float32 {
	n := p.Layers * 2 * p.BlockSize * p.Dim
	return p.data[int(b)*n : (int(b)+1)*n]
}

// Paged is one sequence's cache in a Pool: its block table.
type Paged struct {
	pool     *Pool
	table    []int32
	n, cap   int
	shared   int // leading blocks registered as prefix blocks
	prefixed bool
}

// NewPaged makes an empty cache of at most capacity positions in p. It
// takes no block until Reserve.
func (p *Pool) NewPaged(capacity int) (*Paged, error) {
	if capacity < 1 {
		return nil, fmt.Errorf("kv cache: capacity %d", capacity)
	}
	return &Paged{pool: p, cap: capacity}, nil
}

func (c *Paged) Len() int            { return c.n }
func (c *Paged) Cap() int            { return c.cap }
func (c *Paged) SetLen(n int)        { c.n = n }
func (c *Paged) Blocks() int         { return len(c.table) }
func (c *Paged) BytesAllocated() int { return len(c.table) * c.pool.BlockBytes() }

// Reserve takes the blocks positions [Len, n) need and copies any shared
// block among them, so Put never allocates. On ErrNoBlocks the blocks
// taken so far stay in the table (Truncate or Free gives them back).
func (c *Paged) Reserve(n int) error {
	if n > c.cap {
		return fmt.Errorf("kv cache: %d positions requested, capacity %d", n, c.cap)
	}
	p := c.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := c.n / p.BlockSize; i < len(c.table) && i*p.BlockSize < n; i++ {
		if b := c.table[i]; p.refs[b] > 1 { // copy on write
			nb, err := p.alloc()
			if err != nil {
				return err
			}
			copy(p.block(nb), p.block(b))
			p.release(b)
			c.table[i] = nb
			c.shared = min(c.shared, i)
		}
	}
	for len(c.table) < p.BlocksFor(n) {
		b, err := p.alloc()
		if err != nil {
			return err
		}
		c.table = append(c.table, b)
	}
	return nil
}

// Put writes position pos's rows (Reserve made it writable).
func (c *Paged) Put(l, pos int, k, v []float32) {
	p := c.pool
	b, o := c.table[pos/p.BlockSize], (pos%p.BlockSize)*p.Dim
	copy(p.layerRows(b, l, 0)[o:o+p.Dim], k)
	copy(p.layerRows(b, l, 1)[o:o+p.Dim], v)
}

// Rows returns layer l's rows from j to the end of j's block (at most n).
func (c *Paged) Rows(l, j, n int) (k, v []float32) {
	p := c.pool
	b, o := c.table[j/p.BlockSize], j%p.BlockSize
	end := min(p.BlockSize, o+n-j)
	return p.layerRows(b, l, 0)[o*p.Dim : end*p.Dim], p.layerRows(b, l, 1)[o*p.Dim : end*p.Dim]
}

// Truncate forgets positions from n on and gives back the blocks no
// longer needed (Truncate(Len()) undoes a Reserve).
func (c *Paged) Truncate(n int) {
	c.n = max(0, min(n, c.n))
	p := c.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	keep := p.BlocksFor(c.n)
	for _, b := range c.table[keep:] {
		p.release(b)
	}
	c.table = c.table[:keep]
	c.shared = min(c.shared, c.n/p.BlockSize)
}

// Free gives back every block.
func (c *Paged) Free() { c.Truncate(0) }

// Fork makes a cache that shares every block of c (copied when either
// writes into a shared one).
func (c *Paged) Fork() *Paged {
	p := c.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range c.table {
		p.refs[b]++
	}
	return &Paged{pool: p, table: append([]int32(nil), c.table...), n: c.n, cap: c.cap, shared: c.shared}
}

// SharePrefix starts an empty cache with the longest run of full blocks
// another live sequence has registered for the same first tokens (never
// all of tokens: the last one must still be computed for its logits). It
// returns the positions now filled.
func (c *Paged) SharePrefix(tokens []int32) int {
	if c.n != 0 || len(c.table) != 0 {
		return 0
	}
	p := c.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	parent := int32(-1)
	for i := 0; (i+1)*p.BlockSize < len(tokens) && (i+1)*p.BlockSize <= c.cap; i++ {
		b, ok := p.prefix[prefixKey{parent, tokenKey(tokens[i*p.BlockSize : (i+1)*p.BlockSize])}]
		if !ok {
			break
		}
		p.refs[b]++
		c.table = append(c.table, b)
		parent = b
	}
	c.n, c.shared = len(c.table)*p.BlockSize, len(c.table)
	return c.n
}

// Register offers c's full blocks as prefix blocks for later sequences;
// tokens are the tokens at c's positions.
func (c *Paged) Register(tokens []int32) {
	p := c.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	full := min(c.n, len(tokens)) / p.BlockSize
	for i := c.shared; i < full; i++ {
		parent := int32(-1)
		if i > 0 {
			parent = c.table[i-1]
			if _, chained := p.keyOf[parent]; !chained {
				break // only a chain from position 0 can be looked up
			}
		}
		k := prefixKey{parent, tokenKey(tokens[i*p.BlockSize : (i+1)*p.BlockSize])}
		if _, taken := p.prefix[k]; !taken {
			if _, named := p.keyOf[c.table[i]]; !named {
				p.prefix[k], p.keyOf[c.table[i]] = c.table[i], k
			}
		}
	}
	c.shared = max(c.shared, full)
}

func tokenKey(ids []int32) string {
	b := make([]byte, 4*len(ids))
	for i, id := range ids {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(id), byte(id>>8), byte(id>>16), byte(id>>24)
	}
	return string(b)
}

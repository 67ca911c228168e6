package kv

import (
	"crypto/sha256"
	"encoding/binary"
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
// With Retain set, a full prefix block whose last sequence ends is kept,
// still findable by its tokens, in a least-recently-used list (automatic
// prefix caching, as vLLM does): a later sequence with the same prefix
// takes it back instead of computing it again, and a block is taken from
// the list's cold end, forgetting its tokens, only when no free block is
// left.
//
// A Pool is safe for concurrent use; each Paged cache belongs to one
// sequence.
type Pool struct {
	Layers, Dim, BlockSize, Blocks int
	// Retain keeps ended sequences' full prefix blocks for later ones
	// (set it before the pool is used).
	Retain bool

	mu     sync.Mutex
	data   []float32 // Blocks × Layers × 2 (K then V) × BlockSize × Dim
	refs   []int32   // sequences using each block
	free   []int32   // blocks holding nothing (a stack)
	prefix map[Hash]int32
	hashOf map[int32]Hash
	lru    lruList // retained blocks no sequence uses, coldest first
	stats  Stats
}

// Hash names a full block by every token from position 0 to its end: the
// SHA-256 of the previous block's hash and the block's tokens, so equal
// hashes mean equal token prefixes.
type Hash [sha256.Size]byte

// ScopeOf is the hash a cache's block chain starts from for a named scope
// (Paged.SetScope): "" is the zero hash, the one scope every cache starts
// in.
func ScopeOf(name string) Hash {
	if name == "" {
		return Hash{}
	}
	return sha256.Sum256([]byte("stepthrough kv prefix scope\x00" + name))
}

// chain is the hash of a block holding tokens after a block hashed parent.
func chain(parent Hash, tokens []int32) Hash {
	h := sha256.New()
	h.Write(parent[:])
	var b [4]byte
	for _, id := range tokens {
		binary.LittleEndian.PutUint32(b[:], uint32(id))
		h.Write(b[:])
	}
	var out Hash
	h.Sum(out[:0])
	return out
}

// Stats count the prefix cache's work since the pool was made.
type Stats struct {
	Hits      int // blocks a sequence took from another's prefix
	Revived   int // of those, blocks that had been retained after their sequences ended
	Evictions int // retained blocks reused for other tokens
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
		prefix: map[Hash]int32{}, hashOf: map[int32]Hash{}, lru: newLRU(blocks)}
	for b := blocks - 1; b >= 0; b-- {
		p.free = append(p.free, int32(b))
	}
	return p, nil
}

// BlockBytes is one block's memory.
func (p *Pool) BlockBytes() int { return p.Layers * 2 * p.BlockSize * p.Dim * 4 }

// Free is the number of blocks a sequence may take: those holding nothing
// and the retained ones (which it takes coldest first).
func (p *Pool) Free() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free) + p.lru.n
}

// Used is the number of blocks in use (a shared block counts once).
func (p *Pool) Used() int { return p.Blocks - p.Free() }

// Cached is the number of retained blocks no sequence uses.
func (p *Pool) Cached() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lru.n
}

// Stats returns the prefix cache's counts.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// BlocksFor is how many blocks n positions take.
func (p *Pool) BlocksFor(n int) int { return (n + p.BlockSize - 1) / p.BlockSize }

// alloc takes a free block, else the coldest retained one (forgetting
// its tokens).
func (p *Pool) alloc() (int32, error) {
	var b int32
	switch {
	case len(p.free) > 0:
		b = p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
	case p.lru.n > 0:
		b = p.lru.head
		p.lru.remove(b)
		p.unname(b)
		p.stats.Evictions++
	default:
		return 0, ErrNoBlocks
	}
	p.refs[b] = 1
	return b, nil
}

// release drops one sequence's use of b; unused, it is retained (a named
// block of a retaining pool) or freed.
func (p *Pool) release(b int32) {
	p.refs[b]--
	if p.refs[b] > 0 {
		return
	}
	if _, named := p.hashOf[b]; named && p.Retain {
		p.lru.pushHot(b)
		return
	}
	p.unname(b)
	p.free = append(p.free, b)
}

// unname makes b unfindable by its tokens.
func (p *Pool) unname(b int32) {
	if h, ok := p.hashOf[b]; ok {
		delete(p.prefix, h)
		delete(p.hashOf, b)
	}
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
	pool   *Pool
	table  []int32
	n, cap int
	shared int    // leading blocks registered as prefix blocks
	chain  []Hash // the hashes of the leading full blocks' tokens
	scope  Hash   // the first block's parent in the chain (SetScope)
}

// SetScope starts c's block hashes from scope (ScopeOf) instead of the
// zero hash, before c shares or registers a block: caches share prefix
// blocks only within one scope. The scope is in every block's hash, not
// checked beside it, so a block registered in one scope can never be
// found from another, whatever its tokens (a client cannot learn, from
// what it is served from the cache, what another client asked).
func (c *Paged) SetScope(scope Hash) {
	if c.n == 0 && len(c.chain) == 0 {
		c.scope = scope
	}
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
		b := c.table[i]
		if p.refs[b] == 1 { // its rows are about to change: no longer findable
			p.unname(b)
			c.shared = min(c.shared, i)
			continue
		}
		nb, err := p.alloc() // copy on write
		if err != nil {
			return err
		}
		copy(p.block(nb), p.block(b))
		p.release(b)
		c.table[i] = nb
		c.shared = min(c.shared, i)
	}
	c.chain = c.chain[:min(len(c.chain), c.n/p.BlockSize)]
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
	c.chain = c.chain[:min(len(c.chain), c.n/p.BlockSize)]
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
	return &Paged{pool: p, table: append([]int32(nil), c.table...), n: c.n, cap: c.cap, shared: c.shared, chain: append([]Hash(nil), c.chain...), scope: c.scope}
}

// SharePrefix starts an empty cache with the longest run of full blocks
// registered for the same first tokens in c's scope, by a live sequence or retained
// after one ended (never all of tokens: the last one must still be
// computed for its logits). It returns the positions now filled.
func (c *Paged) SharePrefix(tokens []int32) int {
	if c.n != 0 || len(c.table) != 0 {
		return 0
	}
	p := c.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	parent := c.scope
	for i := 0; (i+1)*p.BlockSize < len(tokens) && (i+1)*p.BlockSize <= c.cap; i++ {
		h := chain(parent, tokens[i*p.BlockSize:(i+1)*p.BlockSize])
		b, ok := p.prefix[h]
		if !ok {
			break
		}
		if p.refs[b] == 0 {
			p.lru.remove(b)
			p.stats.Revived++
		}
		p.refs[b]++
		p.stats.Hits++
		c.table, c.chain = append(c.table, b), append(c.chain, h)
		parent = h
	}
	c.n, c.shared = len(c.table)*p.BlockSize, len(c.table)
	return c.n
}

// Register offers c's full blocks as prefix blocks for later sequences;
// tokens are the tokens at c's positions.
func (c *Paged) Register(tokens []int32) {
	p := c.pool
	full := min(c.n, len(tokens)) / p.BlockSize
	for i := len(c.chain); i < full; i++ { // hashed outside the lock
		parent := c.scope
		if i > 0 {
			parent = c.chain[i-1]
		}
		c.chain = append(c.chain, chain(parent, tokens[i*p.BlockSize:(i+1)*p.BlockSize]))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := c.shared; i < full; i++ {
		h, b := c.chain[i], c.table[i]
		if _, taken := p.prefix[h]; taken {
			continue
		}
		if _, named := p.hashOf[b]; !named {
			p.prefix[h], p.hashOf[b] = b, h
		}
	}
	c.shared = max(c.shared, full)
}

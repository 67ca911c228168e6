package classroom

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// checkBoltFile reads a bbolt file as hostile before bbolt maps it. bbolt
// takes page numbers, element offsets and sizes from the file and reads
// memory at them unchecked; here each is checked against the bytes
// there are, so that bbolt (and its Check, which finds the damage that
// is not about bounds: keys out of order, pages lost or reached twice) only
// ever reads inside the file. It reads what bbolt would: the meta page
// bbolt picks, its freelist, and every page of every bucket from the root.
//
// The layout (bbolt's, format version 2, in the machine's byte order): a
// page is a 16-byte header (id uint64, flags uint16, count uint16,
// overflow uint32) and then count elements of 16 bytes; a branch element
// is (pos uint32, ksize uint32, child page uint64), a leaf element (flags
// uint32, pos uint32, ksize uint32, vsize uint32), pos counted from the
// element itself. A leaf element with flag 1 is a bucket: its value is
// (root page uint64, sequence uint64), followed, when root is 0, by the
// bucket's own leaf page inline.
func checkBoltFile(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		return nil // bbolt starts a new store in it
	}
	c := &boltChecker{r: f, size: st.Size()}
	return c.check()
}

// fileError says where and how a store's file is damaged (Off -1: not at
// one place).
type fileError struct {
	Off int64
	Msg string
}

func (e *fileError) Error() string {
	if e.Off < 0 {
		return e.Msg
	}
	return fmt.Sprintf("at byte %d: %s", e.Off, e.Msg)
}

const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	boltHeader      = 16 // a page's header, an element, a bucket's header
	boltMetaSize    = 64
	boltNoFreelist  = ^uint64(0)
	boltBranch      = 0x01
	boltLeaf        = 0x02
	boltFreelist    = 0x10
	boltBucketEntry = 0x01
	// boltMaxDepth bounds nesting (branch pages and buckets): this store's
	// files nest a few levels; deeper is damage, or a file made to exhaust
	// the stack.
	boltMaxDepth = 64
)

var ne = binary.NativeEndian

type boltMeta struct {
	pageSize                   uint64
	root, freelist, pgid, txid uint64
	ok                         bool
}

type boltChecker struct {
	r        io.ReaderAt
	size     int64
	pageSize int64
	pgid     uint64   // pages in use: ids below it
	seen     []uint64 // a bit per page reached
}

func (c *boltChecker) check() error {
	head := make([]byte, min(c.size, 4096))
	if _, err := c.r.ReadAt(head, 0); err != nil {
		return &fileError{Off: 0, Msg: "its first page cannot be read: " + err.Error()}
	}
	if string(head[:min(len(head), len(sqliteHeader))]) == sqliteHeader {
		return &fileError{Off: 0, Msg: "an SQLite database, not a classroom store (Stepthrough kept rooms in SQLite, in " + oldSQLiteFile + ", before " + BoltFile + ")"}
	}
	m, err := c.meta(head)
	if err != nil {
		return err
	}
	c.pgid = m.pgid
	c.seen = make([]uint64, (m.pgid+63)/64)
	c.mark(0)
	c.mark(1)
	if m.freelist != boltNoFreelist {
		if err := c.freelist(m.freelist); err != nil {
			return err
		}
	}
	return c.tree(m.root, 0)
}

// meta finds the page size and the meta page bbolt would use (of the two,
// the later if it is valid, else the other) and checks that it fits the
// file.
func (c *boltChecker) meta(head []byte) (boltMeta, error) {
	m0 := readBoltMeta(head, 0)
	ps := m0.pageSize
	if !m0.ok { // bbolt then looks for the second meta page at each page size
		for i := 0; i <= 14; i++ {
			pos := int64(1024) << i
			if pos+boltHeader+boltMetaSize > c.size {
				break
			}
			b := make([]byte, boltHeader+boltMetaSize)
			if _, err := c.r.ReadAt(b, pos); err == nil {
				if m := readBoltMeta(b, 0); m.ok {
					ps = m.pageSize
					break
				}
			}
		}
	}
	if ps < 1024 || ps > 1<<24 || ps&(ps-1) != 0 {
		return boltMeta{}, &fileError{Off: 0, Msg: "not a classroom store: no valid bbolt header"}
	}
	if c.size < 2*int64(ps) {
		return boltMeta{}, &fileError{Off: c.size, Msg: fmt.Sprintf("the file ends before its second header (pages of %d bytes)", ps)}
	}
	c.pageSize = int64(ps)
	b := make([]byte, boltHeader+boltMetaSize)
	if _, err := c.r.ReadAt(b, c.pageSize); err != nil {
		return boltMeta{}, &fileError{Off: c.pageSize, Msg: "its second header cannot be read: " + err.Error()}
	}
	m1 := readBoltMeta(b, 0)
	m0.ok = m0.ok && m0.pageSize == ps
	m1.ok = m1.ok && m1.pageSize == ps
	m, other := m0, m1
	if m1.txid > m0.txid {
		m, other = m1, m0
	}
	if !m.ok {
		m = other
	}
	if !m.ok {
		return boltMeta{}, &fileError{Off: 0, Msg: "both of its headers are damaged"}
	}
	switch {
	case m.pgid < 3 || m.pgid > uint64(c.size/c.pageSize):
		return boltMeta{}, &fileError{Off: 0, Msg: fmt.Sprintf("its header counts %d pages of %d bytes, but the file holds %d", m.pgid, c.pageSize, c.size/c.pageSize)}
	case m.root < 2 || m.root >= m.pgid:
		return boltMeta{}, &fileError{Off: 0, Msg: fmt.Sprintf("its root page %d is not among its %d pages", m.root, m.pgid)}
	case m.freelist != boltNoFreelist && (m.freelist < 2 || m.freelist >= m.pgid):
		return boltMeta{}, &fileError{Off: 0, Msg: fmt.Sprintf("its freelist page %d is not among its %d pages", m.freelist, m.pgid)}
	}
	return m, nil
}

// readBoltMeta reads the meta page whose header is at b[off:].
func readBoltMeta(b []byte, off int) boltMeta {
	if len(b) < off+boltHeader+boltMetaSize {
		return boltMeta{}
	}
	m := b[off+boltHeader : off+boltHeader+boltMetaSize]
	h := fnv.New64a()
	h.Write(m[:56])
	return boltMeta{
		pageSize: uint64(ne.Uint32(m[8:])),
		root:     ne.Uint64(m[16:]),
		freelist: ne.Uint64(m[32:]),
		pgid:     ne.Uint64(m[40:]),
		txid:     ne.Uint64(m[48:]),
		ok:       ne.Uint32(m[0:]) == boltMagic && ne.Uint32(m[4:]) == boltVersion && ne.Uint64(m[56:]) == h.Sum64(),
	}
}

// mark notes that page id is reached, reporting whether it already was.
func (c *boltChecker) mark(id uint64) (again bool) {
	bit := uint64(1) << (id % 64)
	again = c.seen[id/64]&bit != 0
	c.seen[id/64] |= bit
	return again
}

// page reads page id, with its overflow pages, after checking that they
// are in use, not reached before, and that its header names it.
func (c *boltChecker) page(id uint64) ([]byte, error) {
	off := int64(id) * c.pageSize
	if id < 2 || id >= c.pgid {
		return nil, &fileError{Off: -1, Msg: fmt.Sprintf("page %d is referred to, but not among its %d pages", id, c.pgid)}
	}
	head := make([]byte, boltHeader)
	if _, err := c.r.ReadAt(head, off); err != nil {
		return nil, &fileError{Off: off, Msg: fmt.Sprintf("page %d cannot be read: %v", id, err)}
	}
	if got := ne.Uint64(head); got != id {
		return nil, &fileError{Off: off, Msg: fmt.Sprintf("page %d's header calls it page %d", id, got)}
	}
	overflow := uint64(ne.Uint32(head[12:]))
	if id+overflow >= c.pgid {
		return nil, &fileError{Off: off, Msg: fmt.Sprintf("page %d runs %d pages on, past the last", id, overflow)}
	}
	for p := id; p <= id+overflow; p++ {
		if c.mark(p) {
			return nil, &fileError{Off: off, Msg: fmt.Sprintf("page %d is reached twice", p)}
		}
	}
	b := make([]byte, int64(overflow+1)*c.pageSize)
	if _, err := c.r.ReadAt(b, off); err != nil {
		return nil, &fileError{Off: off, Msg: fmt.Sprintf("page %d cannot be read: %v", id, err)}
	}
	return b, nil
}

// freelist checks the page listing free pages.
func (c *boltChecker) freelist(id uint64) error {
	b, err := c.page(id)
	if err != nil {
		return err
	}
	off := int64(id) * c.pageSize
	if flags := ne.Uint16(b[8:]); flags != boltFreelist {
		return &fileError{Off: off, Msg: fmt.Sprintf("its freelist page %d is not one (flags %#x)", id, flags)}
	}
	first, n := uint64(0), uint64(ne.Uint16(b[10:]))
	if n == 0xFFFF { // the count is in the first slot
		first, n = 1, ne.Uint64(b[boltHeader:])
	}
	if room := uint64(len(b)-boltHeader) / 8; first > room || n > room-first {
		return &fileError{Off: off, Msg: fmt.Sprintf("its freelist counts %d pages, more than its page holds", n)}
	}
	for i := range n {
		if free := ne.Uint64(b[boltHeader+8*(first+i):]); free < 2 || free >= c.pgid {
			return &fileError{Off: off, Msg: fmt.Sprintf("its freelist names page %d, not among its %d pages", free, c.pgid)}
		}
	}
	return nil
}

// tree checks the page tree rooted at page id.
func (c *boltChecker) tree(id uint64, depth int) error {
	if depth > boltMaxDepth {
		return &fileError{Off: int64(id) * c.pageSize, Msg: "its pages nest too deep"}
	}
	b, err := c.page(id)
	if err != nil {
		return err
	}
	return c.elements(b, int64(id)*c.pageSize, fmt.Sprintf("page %d", id), depth)
}

// elements checks the branch or leaf page in b (at off in the file; a
// bucket's inline page inside another page's value), each key and value
// inside it, and what each points to.
func (c *boltChecker) elements(b []byte, off int64, name string, depth int) error {
	bad := func(format string, args ...any) error {
		return &fileError{Off: off, Msg: name + " " + fmt.Sprintf(format, args...)}
	}
	if len(b) < boltHeader {
		return bad("is shorter than a page's header")
	}
	flags, count := ne.Uint16(b[8:]), uint64(ne.Uint16(b[10:]))
	if flags != boltBranch && flags != boltLeaf {
		return bad("is neither a branch nor a leaf (flags %#x)", flags)
	}
	if flags == boltBranch && count == 0 {
		return bad("is a branch with no children")
	}
	if boltHeader+count*boltHeader > uint64(len(b)) {
		return bad("counts %d elements, more than it holds", count)
	}
	for i := range count {
		e := boltHeader + i*boltHeader
		el := b[e : e+boltHeader]
		pos, ksize, vsize := uint64(ne.Uint32(el[4:])), uint64(ne.Uint32(el[8:])), uint64(ne.Uint32(el[12:]))
		if flags == boltBranch {
			pos, ksize, vsize = uint64(ne.Uint32(el[0:])), uint64(ne.Uint32(el[4:])), 0
		}
		end := e + pos + ksize + vsize
		if end > uint64(len(b)) {
			return bad("element %d's key or value runs past its end", i)
		}
		if flags == boltBranch {
			if err := c.tree(ne.Uint64(el[8:]), depth+1); err != nil {
				return err
			}
			continue
		}
		if ne.Uint32(el[0:])&boltBucketEntry == 0 {
			continue
		}
		v := b[e+pos+ksize : end]
		if len(v) < boltHeader {
			return bad("element %d is a bucket too short for its header", i)
		}
		if depth+1 > boltMaxDepth {
			return bad("holds buckets nested too deep")
		}
		if root := ne.Uint64(v); root != 0 {
			if err := c.tree(root, depth+1); err != nil {
				return err
			}
			continue
		}
		inline := v[boltHeader:]
		if len(inline) >= boltHeader && ne.Uint16(inline[8:]) != boltLeaf {
			return bad("element %d's inline bucket is not a leaf", i)
		}
		if err := c.elements(inline, off, fmt.Sprintf("%s's element %d's inline bucket", name, i), depth+1); err != nil {
			return err
		}
	}
	return nil
}

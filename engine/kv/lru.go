package kv

// lruList is a doubly linked list over block numbers (no allocation once
// made): head is the coldest, tail the most recently released.
type lruList struct {
	prev, next []int32 // -1: none
	in         []bool
	head, tail int32
	n          int
}

func newLRU(blocks int) lruList {
	l := lruList{prev: make([]int32, blocks), next: make([]int32, blocks), in: make([]bool, blocks), head: -1, tail: -1}
	return l
}

// pushHot appends b as the most recently used.
func (l *lruList) pushHot(b int32) {
	l.prev[b], l.next[b], l.in[b] = l.tail, -1, true
	if l.tail >= 0 {
		l.next[l.tail] = b
	} else {
		l.head = b
	}
	l.tail = b
	l.n++
}

// remove takes b out of the list (it must be in it).
func (l *lruList) remove(b int32) {
	if !l.in[b] {
		return
	}
	p, n := l.prev[b], l.next[b]
	if p >= 0 {
		l.next[p] = n
	} else {
		l.head = n
	}
	if n >= 0 {
		l.prev[n] = p
	} else {
		l.tail = p
	}
	l.in[b] = false
	l.n--
}

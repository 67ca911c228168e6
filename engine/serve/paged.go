package serve

import (
	"slices"

	"stepthrough/engine/kv"
)

// admitPaged admits q into the paged pool when the blocks its feed and
// first reply token need are free, after sharing any registered prefix.
// It reports false (and holds nothing) when they are not.
func (s *Scheduler) admitPaged(q *seq) (bool, error) {
	sess, err := s.l.NewPagedSession(s.pool, q.need)
	if err != nil {
		return false, err
	}
	shared, err := sess.SharePrefix(kv.ScopeOf(q.req.CacheScope), q.feed)
	if err != nil {
		sess.Close()
		return false, err
	}
	if s.pool.BlocksFor(len(q.feed)+1)-sess.KVBlocks() > s.pool.Free() {
		sess.Close()
		return false, nil
	}
	q.sess, q.read = sess, shared
	if q.times.Preemptions == 0 {
		q.times.Cached = shared
	}
	return true, nil
}

// blocksNeeded is how many new blocks the planned step takes.
func (s *Scheduler) blocksNeeded() int {
	n := 0
	for i, q := range s.batch {
		n += s.pool.BlocksFor(q.sess.Pos()+len(s.items[i].Tokens)) - q.sess.KVBlocks()
	}
	return n
}

// preempt frees the blocks of the request admitted last and puts it back
// at the head of the queue: it will read its prompt and its reply so far
// again (its sampler keeps its history, and its stream goes on where it
// stopped).
func (s *Scheduler) preempt() {
	q := s.running[len(s.running)-1]
	s.running = s.running[:len(s.running)-1]
	q.sess.Close()
	q.sess = nil
	q.feed = append(slices.Clone(q.req.Prompt), q.out...)
	q.read = 0
	q.times.Preemptions++
	s.totals.Preemptions++
	s.preempted = append(s.preempted, q.id)
	s.queue = append([]*seq{q}, s.queue...)
}

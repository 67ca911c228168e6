package classroom

import "sync/atomic"

// Stats are a classroom's figures for a metrics page: its rooms and
// connections now, and counts since it started.
type Stats struct {
	Rooms, Connections int
	Broadcasts         int64 // views sent to a room's clients (one per change, whatever the clients)
	StoreErrors        int64 // store reads and writes that failed
}

type counters struct {
	broadcasts, storeErrors atomic.Int64
}

// Stats returns the classroom's figures.
func (cl *Classroom) Stats() Stats {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	st := Stats{Rooms: len(cl.rooms), Broadcasts: cl.counts.broadcasts.Load(), StoreErrors: cl.counts.storeErrors.Load()}
	for _, r := range cl.rooms {
		st.Connections += int(r.nclients.Load())
	}
	return st
}

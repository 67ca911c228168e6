package classroom

import "sync/atomic"

// Stats are a classroom's figures for a metrics page: its rooms and
// connections now, and counts since it started.
type Stats struct {
	Rooms, Connections int
	Broadcasts         int64 // views sent to a room's clients (one per change, whatever the clients)
	StoreErrors        int64 // store reads and writes that failed
	// Across servers: events published and received on the bus, events
	// the bus refused, rooms reloaded because another server changed
	// them, and writes refused because another server wrote first.
	Published, Received, BusErrors, CaughtUp, Conflicts int64
	// Restored counts the times a room went back to its last good state
	// after a change it could not show.
	Restored int64
	// Reloads are a room's reads from the store to catch up (what the
	// bus's events and the reads of the versions cost the store; CaughtUp
	// counts those that found a newer state); BusDoubts are the times the
	// bus announced a version the store did not hold.
	Reloads, BusDoubts int64
}

type counters struct {
	broadcasts, storeErrors, restored                   atomic.Int64
	published, received, busErrors, caughtUp, conflicts atomic.Int64
	reloads, busDoubts                                  atomic.Int64
}

// Stats returns the classroom's figures.
func (cl *Classroom) Stats() Stats {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	c := &cl.counts
	st := Stats{Rooms: len(cl.rooms), Broadcasts: c.broadcasts.Load(), StoreErrors: c.storeErrors.Load(),
		Published: c.published.Load(), Received: c.received.Load(), BusErrors: c.busErrors.Load(), CaughtUp: c.caughtUp.Load(), Conflicts: c.conflicts.Load(),
		Reloads: c.reloads.Load(), BusDoubts: c.busDoubts.Load(), Restored: c.restored.Load()}
	for _, r := range cl.rooms {
		st.Connections += int(r.nclients.Load())
	}
	return st
}

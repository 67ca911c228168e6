package server

import (
	"sync"
	"time"
)

// Event streams (/serving's server-sent events) hold a connection each
// for as long as a run lasts: they are capped in all and per address, and
// every write must reach the client within streamWriteWait, so a client
// that stops reading is let go instead of holding the handler forever.
const (
	maxStreams          = 64
	maxStreamsPerClient = 8
	streamWriteWait     = 10 * time.Second
)

// streamLimits counts the open event streams.
type streamLimits struct {
	mu       sync.Mutex
	total    int
	byClient map[string]int
}

// acquire admits a stream for client, returning its release, or false at
// a cap.
func (l *streamLimits) acquire(client string) (func(), bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byClient == nil {
		l.byClient = map[string]int{}
	}
	if l.total >= maxStreams || l.byClient[client] >= maxStreamsPerClient {
		return nil, false
	}
	l.total++
	l.byClient[client]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.total--
		if l.byClient[client]--; l.byClient[client] == 0 {
			delete(l.byClient, client)
		}
	}, true
}

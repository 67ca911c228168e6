package classroom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// NATS is the Bus on a NATS server: each room's events go to the subject
// stepthrough.rooms.CODE, so a room's events keep their order, and every
// server subscribes to them all (a server ignores rooms it does not hold).
// While the connection is down the client keeps reconnecting and buffers
// what is published; servers catch up from the store meanwhile.
type NATS struct {
	nc  *nats.Conn
	bad atomic.Int64 // messages that were not events
	log *slog.Logger
}

const natsSubject = "stepthrough.rooms."

// maxEventBytes bounds an event on the wire; anything larger is not one.
const maxEventBytes = 512

// OpenNATS connects to the NATS server at addr (nats://HOST:PORT). A
// server that is not up yet is retried in the background, as one that goes
// away later is.
func OpenNATS(addr string, log *slog.Logger) (*NATS, error) {
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Host == "" {
		return nil, fmt.Errorf("bus %q: give a nats://HOST:PORT address", truncate(addr, 40))
	}
	b := &NATS{log: log}
	nc, err := nats.Connect(addr, nats.Name("stepthrough"), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
		nats.RetryOnFailedConnect(true), nats.Timeout(2*time.Second),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if nc.IsClosed() { // closed by us
				return
			}
			log.Warn("the bus is down: rooms keep working and catch up from the store", "bus", u.Redacted(), "err", err)
		}),
		nats.ReconnectHandler(func(*nats.Conn) { log.Info("the bus is back", "bus", u.Redacted()) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { log.Warn("bus error", "err", err) }))
	if err != nil {
		return nil, fmt.Errorf("bus %s: %w", u.Redacted(), err)
	}
	b.nc = nc
	return b, nil
}

// Publish sends an event on its room's subject.
func (b *NATS) Publish(ev Event) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return b.nc.Publish(natsSubject+ev.Room, data)
}

// Subscribe calls f with every room event; a message that is not a valid
// event is counted and dropped.
func (b *NATS) Subscribe(f func(Event)) error {
	_, err := b.nc.Subscribe(natsSubject+"*", func(m *nats.Msg) {
		ev, err := ParseEvent(strings.TrimPrefix(m.Subject, natsSubject), m.Data)
		if err != nil {
			if b.bad.Add(1) == 1 {
				b.log.Warn("a message on the bus is not a room event (further ones are counted, not logged)", "subject", truncate(m.Subject, 60), "err", err)
			}
			return
		}
		f(ev)
	})
	return err
}

// ParseEvent reads an event sent on a room's subject, refusing anything
// else: too long, not JSON, another room, an unknown kind.
func ParseEvent(room string, data []byte) (Event, error) {
	var ev Event
	if len(data) > maxEventBytes {
		return ev, fmt.Errorf("an event of %d bytes (at most %d)", len(data), maxEventBytes)
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return ev, fmt.Errorf("an event that is not JSON: %w", err)
	}
	switch {
	case ev.Room != room || !validCode(ev.Room):
		return ev, fmt.Errorf("an event for room %q on the subject of %q", truncate(ev.Room, 12), truncate(room, 12))
	case ev.Kind != EventState && ev.Kind != EventAnswer:
		return ev, fmt.Errorf("an event of kind %q", truncate(ev.Kind, 12))
	case ev.Version < 0:
		return ev, errors.New("an event with a negative version")
	}
	return ev, nil
}

// Ping checks that the bus is connected and answers.
func (b *NATS) Ping(ctx context.Context) error {
	if !b.nc.IsConnected() {
		return errors.New("not connected")
	}
	return b.nc.FlushWithContext(ctx)
}

// Close flushes and closes the connection.
func (b *NATS) Close() {
	b.nc.Flush()
	b.nc.Close()
}

// validCode says s is a join code as the server writes them.
func validCode(s string) bool {
	c, ok := NormalizeCode(s)
	return ok && c == s
}

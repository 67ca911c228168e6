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
	nc      *nats.Conn
	bad     atomic.Int64 // messages that were not events
	closing atomic.Bool  // Close was called: the connection's end is ours
	log     *slog.Logger
}

const natsSubject = "stepthrough.rooms."

// maxEventBytes bounds an event on the wire; anything larger is not one.
const maxEventBytes = 512

// BusAuth is how a server proves itself to the NATS server: a user and
// password (which may also come in the address, nats://USER:PASSWORD@…),
// a token, or an nkey seed file. A NATS server anyone can reach without
// them lets anyone announce changes to every room. None of it is ever
// logged.
type BusAuth struct {
	User, Password string
	Token          string
	NkeyFile       string // an nkey user seed (SU…), as `nk -gen user` writes
}

// ErrBusRefused is OpenNATS's answer when the NATS server refuses the
// credentials given (or their absence).
var ErrBusRefused = errors.New("the NATS server refused this server's credentials")

// OpenNATS connects to the NATS server at addr (nats://HOST:PORT) with
// auth. Credentials it refuses are an error at once (ErrBusRefused); a
// server that is not up yet is retried in the background, as one that goes
// away later is.
func OpenNATS(addr string, auth BusAuth, log *slog.Logger) (*NATS, error) {
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Host == "" {
		return nil, fmt.Errorf("bus %q: give a nats://HOST:PORT address", truncate(redact(addr), 40))
	}
	shown := redact(addr)
	creds, err := auth.options(u)
	if err != nil {
		return nil, fmt.Errorf("bus %s: %w", shown, err)
	}
	b := &NATS{log: log}
	opts := append(b.options(shown), creds...)
	nc, err := nats.Connect(addr, opts...)
	switch {
	case refused(err):
		return nil, fmt.Errorf("bus %s: %w (%s): %w", shown, ErrBusRefused, auth.given(u), err)
	case err != nil: // not up yet: keep trying in the background
		log.Warn("the bus does not answer yet: rooms catch up from the store until it does", "bus", shown, "err", err)
		later := nats.ConnectHandler(func(nc *nats.Conn) { b.checkAuthorization(nc, shown) })
		if nc, err = nats.Connect(addr, append(opts, nats.RetryOnFailedConnect(true), later)...); err != nil {
			return nil, fmt.Errorf("bus %s: %w", shown, err)
		}
	default:
		b.checkAuthorization(nc, shown)
	}
	b.nc = nc
	return b, nil
}

// checkAuthorization warns when the NATS server lets anyone in.
func (b *NATS) checkAuthorization(nc *nats.Conn, shown string) {
	if !nc.AuthRequired() {
		b.log.Warn("the NATS server asks for no credentials: anyone who can reach it can announce changes to this server's rooms (configure its authorization; see deploy/README.md)", "bus", shown)
	}
}

// options are the connection's settings and handlers, which log the
// address only as shown (its secrets redacted).
func (b *NATS) options(shown string) []nats.Option {
	log := b.log
	return []nats.Option{nats.Name("stepthrough"), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond), nats.Timeout(2 * time.Second),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if nc.IsClosed() { // closed by us
				return
			}
			log.Warn("the bus is down: rooms keep working and catch up from the store", "bus", shown, "err", err)
		}),
		nats.ReconnectHandler(func(*nats.Conn) { log.Info("the bus is back", "bus", shown) }),
		nats.ClosedHandler(func(nc *nats.Conn) {
			if b.closing.Load() {
				return
			}
			// the client gives up only when the server refuses it twice
			log.Error("the bus closed for good: rooms catch up from the store, but this server announces nothing until it restarts", "bus", shown, "err", nc.LastError())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { log.Warn("bus error", "err", err) })}
}

// options are the nats.go options for the credentials, which may be given
// once: in the address or in auth, and one kind of them.
func (a BusAuth) options(u *url.URL) ([]nats.Option, error) {
	kinds := 0
	for _, set := range []bool{u.User != nil, a.User != "" || a.Password != "", a.Token != "", a.NkeyFile != ""} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds > 1:
		return nil, errors.New("give one kind of credentials, once: a user and password (in the address or apart), a token or an nkey")
	case (a.User == "") != (a.Password == ""):
		return nil, errors.New("a bus user needs its password, and a password its user")
	case a.User != "":
		return []nats.Option{nats.UserInfo(a.User, a.Password)}, nil
	case a.Token != "":
		return []nats.Option{nats.Token(a.Token)}, nil
	case a.NkeyFile != "":
		opt, err := nats.NkeyOptionFromSeed(a.NkeyFile)
		if err != nil {
			return nil, fmt.Errorf("the nkey seed %s: %w", truncate(a.NkeyFile, 80), err)
		}
		return []nats.Option{opt}, nil
	}
	return nil, nil // in the address, or none
}

// given names the kind of credentials offered, for the error that says
// they were refused.
func (a BusAuth) given(u *url.URL) string {
	switch {
	case u.User != nil:
		return "those in the address"
	case a.User != "":
		return "user " + truncate(a.User, 40) + " and its password"
	case a.Token != "":
		return "a token"
	case a.NkeyFile != "":
		return "the nkey in " + truncate(a.NkeyFile, 80)
	}
	return "none were given"
}

// refused says a connection failed on its credentials.
func refused(err error) bool {
	for _, e := range []error{nats.ErrAuthorization, nats.ErrAuthExpired, nats.ErrAuthRevoked, nats.ErrAccountAuthExpired} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
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
	b.closing.Store(true)
	b.nc.Flush()
	b.nc.Close()
}

// validCode says s is a join code as the server writes them.
func validCode(s string) bool {
	c, ok := NormalizeCode(s)
	return ok && c == s
}

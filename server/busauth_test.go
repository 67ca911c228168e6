package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"stepthrough/classroom"
	"stepthrough/classroom/natstest"
	"stepthrough/classroom/pgtest"
)

const busUser, busPassword = "stepthrough", "bus-Secret-9f2"

// busWithAuth is a nats-server that takes only busUser with busPassword.
func busWithAuth(t *testing.T) *natstest.Server {
	return natstest.Start(t, "--user", busUser, "--pass", busPassword)
}

// A server whose bus asks for credentials starts only with the right
// ones: without them, or with a wrong password, New fails with one
// sentence saying the NATS server refused them, and the password is in
// neither the error nor the log.
func TestBusNeedsCredentials(t *testing.T) {
	bus := busWithAuth(t)
	store := pgtest.URL(t)
	withUser := strings.Replace(bus.URL(), "nats://", "nats://"+busUser+":"+busPassword+"@", 1)
	for _, tc := range []struct {
		name string
		addr string
		auth classroom.BusAuth
		ok   bool
	}{
		{"none", bus.URL(), classroom.BusAuth{}, false},
		{"a wrong password", bus.URL(), classroom.BusAuth{User: busUser, Password: "wrong-Secret-1"}, false},
		{"user and password", bus.URL(), classroom.BusAuth{User: busUser, Password: busPassword}, true},
		{"in the address", withUser, classroom.BusAuth{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logged bytes.Buffer
			s, err := New(Config{Embedded: lessonModels(), StoreURL: store, BusURL: tc.addr, BusAuth: tc.auth,
				Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			if err == nil {
				s.Close()
			}
			switch {
			case tc.ok && err != nil:
				t.Errorf("refused: %v", err)
			case !tc.ok && (!errors.Is(err, classroom.ErrBusRefused) || !strings.Contains(err.Error(), "refused this server's credentials")):
				t.Errorf("got %v, want the credentials refused", err)
			}
			t.Logf("%s: %v", tc.name, err)
			for _, secret := range []string{busPassword, "wrong-Secret-1"} {
				if strings.Contains(fmt.Sprint(err), secret) || strings.Contains(logged.String(), secret) {
					t.Errorf("the password is in the error or the log: %v\n%s", err, logged.String())
				}
			}
		})
	}
}

// Finding 8: 10,000 forged `state` events a second for a live room
// started a goroutine each on every server and cost a store read each.
// Now a flood (20,000 state events with ever newer versions and 2,000
// answer events, from a client holding the bus's credentials) leaves the
// goroutines where they were, costs each server a few store reads,
// changes no screen, and the instructor's step still reaches every
// student. A client without the credentials cannot connect at all.
func TestRoomsUnderForgedBusFlood(t *testing.T) {
	bus := busWithAuth(t)
	servers, urls, store := clusterWith(t, 2, Config{BusURL: bus.URL(), BusAuth: classroom.BusAuth{User: busUser, Password: busPassword}})
	if _, err := nats.Connect(bus.URL()); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("a client without credentials: %v, want refused", err)
	}
	forger, err := nats.Connect(bus.URL(), nats.UserInfo(busUser, busPassword))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(forger.Close)

	code, key := startRoom(t, urls[0], url.Values{"lesson": {"logits-and-softmax"}})
	teach := teacher(t, urls[0], code, key)
	here, there := follower(t, urls[0], code), follower(t, urls[1], code)
	sr, err := classroomStore(t, store).LoadRoom(t.Context(), code)
	if err != nil {
		t.Fatal(err)
	}
	var before [2]classroom.Stats
	for i, s := range servers {
		before[i] = s.class.Stats()
	}
	base := runtime.NumGoroutine()
	stopSampling := sampleGoroutines()

	next := sr.Version + 1
	flood := func() { // 10,000 state events, 1,000 answer events
		for i := range 10_000 {
			publishEvent(t, forger, classroom.Event{Room: code, Kind: classroom.EventState, Version: next, From: "forger"})
			next++
			if i%10 == 0 {
				publishEvent(t, forger, classroom.Event{Room: code, Kind: classroom.EventAnswer, From: "forger"})
			}
		}
		if err := forger.Flush(); err != nil {
			t.Error(err)
		}
	}
	flood()
	for _, c := range []*wsClient{here, there, teach} {
		c.none("data-stored=", 500*time.Millisecond) // no screen changes
	}

	var wg sync.WaitGroup
	wg.Go(flood)
	start := time.Now()
	teach.send(map[string]string{"action": "lesson-step", "to": "1"})
	teach.wait(`data-lesson-step="1"`)
	took := time.Since(start)
	here.wait(`data-lesson-step="1"`)
	there.wait(`data-lesson-step="1"`) // from the store's versions while the bus is doubted
	reached := time.Since(start)
	wg.Wait()
	most := stopSampling()

	t.Logf("22,000 forged events: goroutines %d before, %d at most during; the instructor's step answered in %v and reached the student on the other server in %v",
		base, most, took, reached)
	for i, s := range servers {
		st := s.class.Stats()
		reads := st.Reloads - before[i].Reloads
		t.Logf("server %d: %d events received, %d store reads, bus doubted %d time(s)", i+1, st.Received-before[i].Received, reads, st.BusDoubts-before[i].BusDoubts)
		if reads > 20 {
			t.Errorf("server %d read the room from the store %d times for 22,000 forged events", i+1, reads)
		}
	}
	if most >= base+100 {
		t.Errorf("goroutines rose from %d to %d during the flood", base, most)
	}
}

func publishEvent(t *testing.T, nc *nats.Conn, ev classroom.Event) {
	b, _ := json.Marshal(ev)
	if err := nc.Publish("stepthrough.rooms."+ev.Room, b); err != nil {
		t.Error(err)
	}
}

// sampleGoroutines counts the process's goroutines every 2 ms until the
// function it returns is called, which returns the most it saw.
func sampleGoroutines() func() int {
	var most int
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			most = max(most, runtime.NumGoroutine())
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() int {
		close(done)
		<-stopped
		return most
	}
}

package classroom

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"stepthrough/classroom/pgtest"
)

// stores are the Store implementations under the same contract: bbolt in
// a temporary directory, and PostgreSQL in a throw-away database.
func stores(t *testing.T) map[string]func(t *testing.T) Store {
	return map[string]func(t *testing.T) Store{
		"bolt": func(t *testing.T) Store {
			st, err := OpenBolt(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func(t *testing.T) Store {
			st, err := OpenPostgres(context.Background(), pgtest.URL(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
}

// Every store keeps a room, its latest state and every student's latest
// answer per step, counts live rooms per creator, and forgets expired ones
// with their answers.
func TestStoreContract(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			ctx := context.Background()
			now := time.Now().Truncate(time.Second)
			state, _ := goodState(t)
			rec := Record{Code: "ABC123", SecretHash: "h", Creator: "10.0.0.1", Created: now, Expires: now.Add(time.Hour)}
			if _, err := st.LoadRoom(ctx, rec.Code); !errors.Is(err, ErrNoRoom) {
				t.Fatalf("a room never saved: %v", err)
			}
			v1, err := st.SaveRoom(ctx, rec, state)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.SaveRoom(ctx, rec, state); !errors.Is(err, ErrConflict) {
				t.Fatalf("a second new room with the same code: %v, want ErrConflict", err)
			}
			state.LessonStep = 3
			later := rec
			later.Expires, later.SecretHash, later.Creator, later.Version = now.Add(2*time.Hour), "changed", "elsewhere", v1
			v2, err := st.SaveRoom(ctx, later, state)
			if err != nil || v2 != v1+1 {
				t.Fatalf("saved from version %d: version %d, %v", v1, v2, err)
			}
			stale := later
			state.LessonStep = 4
			if _, err := st.SaveRoom(ctx, stale, state); !errors.Is(err, ErrConflict) { // from v1 again: another server's write
				t.Fatalf("a write from a stale version: %v, want ErrConflict", err)
			}
			state.LessonStep = 3
			for _, a := range []struct {
				step           int
				student, value string
			}{{1, "s1", "a"}, {1, "s2", "b"}, {1, "s1", "c"}, {2, "s1", "d"}} {
				if err := st.SaveAnswer(ctx, rec.Code, a.step, a.student, a.value); err != nil {
					t.Fatal(err)
				}
			}
			got, err := st.LoadRoom(ctx, rec.Code)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := state.Marshal()
			saved, _ := ReadStored(b, stateSum(b)) // the state as stored (its format version set)
			want := &Stored{Record: Record{Code: rec.Code, SecretHash: "h", Creator: "10.0.0.1", Created: now, Expires: now.Add(2 * time.Hour), Version: v2},
				State: saved, Answers: map[int]map[string]string{1: {"s1": "c", "s2": "b"}, 2: {"s1": "d"}}}
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
				t.Errorf("loaded (-want +got):\n%s", diff)
			}
			other := Record{Code: "XYZ789", SecretHash: "h2", Creator: "10.0.0.2", Created: now, Expires: now.Add(time.Minute)}
			if _, err := st.SaveRoom(ctx, other, state); err != nil {
				t.Fatal(err)
			}
			if all, mine, err := st.CountRooms(ctx, now, "10.0.0.1"); err != nil || all != 2 || mine != 1 {
				t.Errorf("count: %d rooms, %d of the creator's (%v); want 2, 1", all, mine, err)
			}
			if err := st.DeleteExpired(ctx, now.Add(30*time.Minute)); err != nil {
				t.Fatal(err)
			}
			if _, err := st.LoadRoom(ctx, other.Code); !errors.Is(err, ErrNoRoom) {
				t.Errorf("an expired room: %v", err)
			}
			if all, _, _ := st.CountRooms(ctx, now, ""); all != 1 {
				t.Errorf("%d rooms after expiry, want 1", all)
			}
		})
	}
}

// Many answers at once, from many goroutines (the pool's connections
// at work), are all kept.
func TestStoreConcurrentAnswers(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			ctx := context.Background()
			state, _ := goodState(t)
			now := time.Now()
			if _, err := st.SaveRoom(ctx, Record{Code: "ROOM01", Created: now, Expires: now.Add(time.Hour)}, state); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for i := range 40 {
				wg.Go(func() {
					if err := st.SaveAnswer(ctx, "ROOM01", 1, fmt.Sprintf("s%02d", i), "x"); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			got, err := st.LoadRoom(ctx, "ROOM01")
			if err != nil || len(got.Answers[1]) != 40 {
				t.Errorf("%d answers kept of 40 (%v)", len(got.Answers[1]), err)
			}
		})
	}
}

// A PostgreSQL store written by a newer server is refused in one line
// naming both versions; servers starting together migrate it once; an
// older schema is brought up to date, its rooms kept.
func TestPostgresSchemaVersions(t *testing.T) {
	u := pgtest.URL(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			st, err := OpenPostgres(ctx, u)
			if err != nil {
				t.Error(err)
				return
			}
			st.Close()
		})
	}
	wg.Wait()
	st, err := OpenPostgres(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `UPDATE stepthrough_schema SET version = 99`); err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, err = OpenPostgres(ctx, u)
	if err == nil || !containsAll(err.Error(), "version 99", "this one reads 2") {
		t.Errorf("a newer schema: %v", err)
	}
	if _, err := OpenPostgres(ctx, "postgres://nobody:secret@127.0.0.1:1/none?connect_timeout=1"); err == nil || containsAll(err.Error(), "secret") {
		t.Errorf("an unreachable server: %v (the password must not be shown)", err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// A store of schema 1 (before the shared secret) is migrated to the
// current one with its rooms, and every server on it then gets the same
// secret.
func TestPostgresMigratesFromSchema1(t *testing.T) {
	u := pgtest.URL(t)
	ctx := context.Background()
	st, err := OpenPostgres(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	state, _ := goodState(t)
	now := time.Now()
	if _, err := st.SaveRoom(ctx, Record{Code: "OLD001", Created: now, Expires: now.Add(time.Hour)}, state); err != nil {
		t.Fatal(err)
	}
	// back to schema 1, as a server of that version left it
	if _, err := st.pool.Exec(ctx, `DROP TABLE server_secret; UPDATE stepthrough_schema SET version = 1`); err != nil {
		t.Fatal(err)
	}
	st.Close()
	a, err := OpenPostgres(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.LoadRoom(ctx, "OLD001"); err != nil {
		t.Errorf("the room from schema 1: %v", err)
	}
	b, err := OpenPostgres(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sa, err1 := a.Secret(ctx)
	sb, err2 := b.Secret(ctx)
	if err1 != nil || err2 != nil || len(sa) != 32 || string(sa) != string(sb) {
		t.Errorf("secrets %x / %x (%v, %v): want one 32-byte secret for both", sa, sb, err1, err2)
	}
}

// Writers racing from one version: exactly one wins, the rest are told
// ErrConflict, and the stored state is the winner's. Marks reads the
// versions and answer counts.
func TestStoreVersionRace(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			ctx := context.Background()
			state, _ := goodState(t)
			now := time.Now()
			rec := Record{Code: "RACE01", Created: now, Expires: now.Add(time.Hour)}
			v, err := st.SaveRoom(ctx, rec, state)
			if err != nil {
				t.Fatal(err)
			}
			rec.Version = v
			var wins, conflicts atomic.Int32
			winner := make(chan int, 1)
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					s := state
					s.LessonStep = i + 1
					_, err := st.SaveRoom(ctx, rec, s)
					switch {
					case err == nil:
						wins.Add(1)
						winner <- i + 1
					case errors.Is(err, ErrConflict):
						conflicts.Add(1)
					default:
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if wins.Load() != 1 || conflicts.Load() != 7 {
				t.Fatalf("%d writes won, %d conflicted; want 1 and 7", wins.Load(), conflicts.Load())
			}
			got, err := st.LoadRoom(ctx, rec.Code)
			if err != nil || got.State.LessonStep != <-winner || got.Version != v+1 {
				t.Fatalf("stored %+v (%v)", got, err)
			}
			if err := st.SaveAnswer(ctx, rec.Code, 1, "s1", "x"); err != nil {
				t.Fatal(err)
			}
			marks, err := st.Marks(ctx, []string{rec.Code, "NOROOM"})
			if diff := cmp.Diff(map[string]Mark{rec.Code: {Version: v + 1, Answers: 1}}, marks); err != nil || diff != "" {
				t.Fatalf("marks (-want +got):\n%s (%v)", diff, err)
			}
		})
	}
}

package classroom

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/spec"
)

func goodState(t testing.TB) (State, []byte) {
	s := State{Lesson: "seeds", LessonStep: 2, Run: spec.Default("lesson.gguf"), Revealed: map[int]bool{1: true}}
	s.Run.Prompt = "Once"
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return s, b
}

// edit rewrites a marshalled state's JSON object.
func edit(t *testing.T, b []byte, f func(m map[string]any)) []byte {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Damage in a stored state is named, and the room gets what could be read.
func TestReadStoredNamesDamage(t *testing.T) {
	_, good := goodState(t)
	sum := stateSum(good)
	tests := []struct {
		name   string
		b      []byte
		sum    string
		want   []string // substrings of the damage, in order
		broken bool     // the run is not to be replayed
		lesson string   // what was read
	}{
		{name: "intact", b: good, sum: sum, lesson: "seeds"},
		{name: "saved before checksums", b: good, lesson: "seeds"},
		{name: "lesson deleted on disk", b: edit(t, good, func(m map[string]any) { delete(m, "lesson") }), sum: sum,
			want: []string{"checksum does not match", `the field "lesson" is missing`}},
		{name: "run missing", b: edit(t, good, func(m map[string]any) { delete(m, "run") }),
			want: []string{`the field "run" is missing`, "its run is damaged (missing)"}, broken: true, lesson: "seeds"},
		{name: "unknown field", b: edit(t, good, func(m map[string]any) { m["lessen"] = "x" }),
			want: []string{`unknown field "lessen"`}, lesson: "seeds"},
		{name: "step of the wrong type", b: edit(t, good, func(m map[string]any) { m["lesson_step"] = "two" }),
			want: []string{"lesson_step"}, lesson: "seeds"},
		{name: "negative step", b: edit(t, good, func(m map[string]any) { m["lesson_step"] = -3 }),
			want: []string{"lesson step -3 is negative"}, lesson: "seeds"},
		{name: "run out of range", b: edit(t, good, func(m map[string]any) { m["run"].(map[string]any)["max_tokens"] = -5 }),
			want: []string{"its run is damaged", "max tokens -5"}, broken: true, lesson: "seeds"},
		{name: "run with a stray field", b: edit(t, good, func(m map[string]any) { m["run"].(map[string]any)["promt"] = "x" }),
			want: []string{"its run is damaged", "promt"}, broken: true, lesson: "seeds"},
		{name: "truncated", b: good[:len(good)/2], sum: sum,
			want: []string{"checksum does not match", "not readable JSON"}, broken: true},
		{name: "newer", b: []byte(`{"version":99}`), want: []string{"version 99, newer"}, broken: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, damage := ReadStored(tt.b, tt.sum)
			got := strings.Join(damage, "; ")
			for _, w := range tt.want {
				i := strings.Index(got, w)
				if i < 0 {
					t.Fatalf("damage %q lacks %q", got, w)
				}
				got = got[i+len(w):]
			}
			if len(tt.want) == 0 && len(damage) > 0 {
				t.Errorf("damage %q, want none", damage)
			}
			if (s.Broken != "") != tt.broken {
				t.Errorf("broken %q, want %v", s.Broken, tt.broken)
			}
			if s.Lesson != tt.lesson {
				t.Errorf("lesson %q, want %q", s.Lesson, tt.lesson)
			}
			if err := s.Run.Validate(); err != nil {
				t.Errorf("the run handed back does not validate: %v", err)
			}
		})
	}
}

// A store written by schema 1 (no checksum, no creator) opens as schema 2
// with its rooms, which load without damage and count by creator after
// their next save.
func TestStoreMigratesFromSchema1(t *testing.T) {
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "rooms.db"))
	if err != nil {
		t.Fatal(err)
	}
	_, b := goodState(t)
	now := time.Now()
	for _, q := range []string{
		`CREATE TABLE rooms (code TEXT PRIMARY KEY, secret_hash TEXT NOT NULL, state TEXT NOT NULL, created INTEGER NOT NULL, expires INTEGER NOT NULL)`,
		`CREATE TABLE answers (code TEXT NOT NULL, step INTEGER NOT NULL, student TEXT NOT NULL, answer TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (code, step, student))`,
		`PRAGMA user_version = 1`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO rooms VALUES ('OLDOLD', 'h', ?, ?, ?)`, string(b), now.Unix(), now.Add(time.Hour).Unix()); err != nil {
		t.Fatal(err)
	}
	db.Close()

	st, err := OpenSQLite(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var version int
	st.db.QueryRow("PRAGMA user_version").Scan(&version)
	r, err := st.LoadRoom(t.Context(), "OLDOLD")
	if err != nil || version != schemaVersion || len(r.Damage) > 0 || r.State.LessonStep != 2 {
		t.Fatalf("migrated: version %d, %+v, %v", version, r, err)
	}
	rec := Record{Code: "NEWNEW", SecretHash: "h", Creator: "10.0.0.1", Created: now, Expires: now.Add(time.Hour)}
	if _, err := st.SaveRoom(t.Context(), rec, r.State); err != nil {
		t.Fatal(err)
	}
	all, mine, err := st.CountRooms(t.Context(), now, "10.0.0.1")
	if err != nil || all != 2 || mine != 1 {
		t.Errorf("CountRooms: %d all, %d mine, %v; want 2, 1", all, mine, err)
	}
}

// A quota makes writes fail as on a full disk; lifting it lets them in.
func TestStoreQuota(t *testing.T) {
	st, err := OpenSQLite(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetQuota(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 64<<10)
	if err := st.SaveAnswer(t.Context(), "ABCDEF", 0, "s", big); err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("over the quota: %v, want a full database", err)
	}
	if err := st.SetQuota(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveAnswer(t.Context(), "ABCDEF", 0, "s", big); err != nil {
		t.Fatalf("quota lifted: %v", err)
	}
}

// FuzzStoredRoom: no stored state panics the reader; what it reads back
// has a valid run and survives a save and a read unchanged.
func FuzzStoredRoom(f *testing.F) {
	_, good := goodState(f)
	f.Add(good, stateSum(good))
	f.Add([]byte(`{"lesson":"seeds","lesson_step":1,"settings":{"Prompt":"x","Seed":"4"},"step":2}`), "")
	f.Add([]byte(`{"version":2,"lesson_step":-1,"run":{"max_tokens":1e99}}`), "")
	f.Add([]byte(`[1,2]`), "00")
	f.Fuzz(func(t *testing.T, b []byte, sum string) {
		s, _ := ReadStored(b, sum)
		if err := s.Run.Validate(); err != nil {
			t.Fatalf("read back an invalid run: %v", err)
		}
		out, err := s.Marshal()
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		back, damage := ReadStored(out, stateSum(out))
		if len(damage) > 0 {
			t.Fatalf("a saved state reads back damaged: %q\n%s", damage, out)
		}
		if diff := cmp.Diff(s, back, cmp.Comparer(func(a, b float64) bool { return a == b || a != a && b != b })); diff != "" {
			t.Fatalf("round trip (-read +again):\n%s", diff)
		}
	})
}

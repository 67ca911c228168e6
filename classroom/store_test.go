package classroom

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"stepthrough/spec"
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

// A quota makes writes that need the file to grow fail as on a full disk,
// and nothing of them is kept; writes that fit in the pages the file has
// go on; lifting the quota lets the rest in.
func TestStoreQuota(t *testing.T) {
	st, err := OpenBolt(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	state, _ := goodState(t)
	now := time.Now()
	if _, err := st.SaveRoom(t.Context(), Record{Code: "ABCDEF", Created: now, Expires: now.Add(time.Hour)}, state); err != nil {
		t.Fatal(err)
	}
	for range 3 { // the room's answers get their page, the writes their spare ones
		if err := st.SaveAnswer(t.Context(), "ABCDEF", 0, "s", "first"); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetQuota(t.Context(), 1); err != nil { // no bigger than it is
		t.Fatal(err)
	}
	for i := range 20 {
		if err := st.SaveAnswer(t.Context(), "ABCDEF", 0, "s", fmt.Sprint(i)); err != nil {
			t.Fatalf("a small answer under the quota, write %d: %v", i, err)
		}
	}
	big := strings.Repeat("x", 64<<10)
	if err := st.SaveAnswer(t.Context(), "ABCDEF", 0, "s", big); err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("over the quota: %v, want a full store", err)
	}
	if r, err := st.LoadRoom(t.Context(), "ABCDEF"); err != nil || r.Answers[0]["s"] != "19" {
		t.Fatalf("after the refused write: %v, %v; want the answer before it", r, err)
	}
	if err := st.SetQuota(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveAnswer(t.Context(), "ABCDEF", 0, "s", big); err != nil {
		t.Fatalf("quota lifted: %v", err)
	}
	if r, err := st.LoadRoom(t.Context(), "ABCDEF"); err != nil || r.Answers[0]["s"] != big {
		t.Fatalf("quota lifted: the answer is not stored (%v)", err)
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

package classroom

import (
	"encoding/json"
	"testing"
)

// Events read off the bus: a well-formed one for its own room is taken;
// anything else (another room's code, an unknown kind, a negative version,
// too long, not JSON) is refused.
func TestParseEvent(t *testing.T) {
	for _, tc := range []struct {
		name, room, data string
		ok               bool
	}{
		{"state", "ABCDEF", `{"room":"ABCDEF","kind":"state","version":3,"from":"a"}`, true},
		{"answer", "ABCDEF", `{"room":"ABCDEF","kind":"answer","from":"a"}`, true},
		{"another room's subject", "ABCDEG", `{"room":"ABCDEF","kind":"state","version":3}`, false},
		{"not a code", "abc", `{"room":"abc","kind":"state"}`, false},
		{"unknown kind", "ABCDEF", `{"room":"ABCDEF","kind":"drop"}`, false},
		{"negative version", "ABCDEF", `{"room":"ABCDEF","kind":"state","version":-1}`, false},
		{"not JSON", "ABCDEF", `{"room":`, false},
		{"too long", "ABCDEF", `{"room":"ABCDEF","kind":"state","from":"` + string(make([]byte, 600)) + `"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEvent(tc.room, []byte(tc.data))
			if (err == nil) != tc.ok {
				t.Errorf("ParseEvent(%q, %.60q): %v, want ok=%v", tc.room, tc.data, err, tc.ok)
			}
		})
	}
}

// ParseEvent never panics, and what it takes re-encodes within the size
// bound and names the subject's room.
func FuzzParseEvent(f *testing.F) {
	f.Add("ABCDEF", []byte(`{"room":"ABCDEF","kind":"state","version":3,"from":"a"}`))
	f.Add("ABCDEF", []byte(`{"room":"ABCDEF","kind":"answer"}`))
	f.Add("", []byte(`null`))
	f.Fuzz(func(t *testing.T, room string, data []byte) {
		ev, err := ParseEvent(room, data)
		if err != nil {
			return
		}
		b, _ := json.Marshal(ev)
		if ev.Room != room || len(b) > 2*maxEventBytes {
			t.Fatalf("took %+v from the subject of %q", ev, room)
		}
	})
}

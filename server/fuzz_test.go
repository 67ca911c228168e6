package server

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzExplorerMessage drives an Explorer session with arbitrary WebSocket
// messages: every one is answered with a fragment or a one-line note,
// never a panic (each message also checks the session still answers: a
// refused one gets a note, any other the whole fragment).
func FuzzExplorerMessage(f *testing.F) {
	s := mustNew(f, Config{Embedded: lessonModels()})
	se, err := s.sessions.New("fuzz")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		`{"action":"run","prompt":"Once upon a time","temperature":"0","max_tokens":"4"}`,
		`{"action":"step"}`, `{"action":"back"}`, `{"action":"next-token"}`, `{"action":"end"}`, `{"action":"reset"}`,
		`{"action":"temperature","view_temperature":"0.5"}`, `{"action":"view","layer":"1","head":"2","scores":"on"}`,
		`{"action":"run","prompt":"x","top_p":"2"}`, `{"action":"run","order":"top-k,top-k"}`, `{"action":"view","layer":"-9"}`,
		`{"action":"run","prompt":"` + strings.Repeat("é", 300) + `","max_tokens":"2"}`, `[]`, `{"action":7}`, `{`,
		`{"action":"goto","stage":"mlp","layer":"2"}`, `{"action":"goto","stage":"sampler","filter":"99"}`, `{"action":"top_p","view_top_p":"0.3"}`,
	} {
		f.Add([]byte(seed))
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, raw []byte) {
		drawn := ""
		reply, note := explorerMessage(ctx, se, raw, &drawn)
		switch {
		case note != "":
			if strings.Contains(note, "\n") || !utf8.ValidString(note) {
				t.Fatalf("note %q", note)
			}
		case !strings.Contains(string(reply), `id="explorer"`):
			t.Fatalf("reply without the Explorer fragment: %.200s", reply)
		}
	})
}

package api

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/stop"
)

// A reply releases each token's internals with the delta that releases
// its text; a token whose text is held (a stop sequence forming) sends
// them in a delta of their own; the end-of-generation token's come with
// the last delta; the choice keeps them all, in order. Without them a
// delta carries none.
func TestReplyReleasesInternals(t *testing.T) {
	tk := lessonTokenizer(t)
	ids := append(tk.EncodeIDs("The capital of France is Paris", false), tk.EOT())
	for _, tt := range []struct {
		name  string
		stops []string
		probe bool
		held  bool // some delta has internals and no text
	}{
		{name: "no stop", probe: true},
		{name: "a stop forming then dropped", stops: []string{"France iz"}, probe: true, held: true},
		{name: "without the extension"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, e := DecodeCompletion(context.Background(), []byte(`{"prompt": "Q:"}`), DefaultLimits)
			if e != nil {
				t.Fatal(e)
			}
			req.Stop = tt.stops
			p, e := Build(req, tk)
			if e != nil {
				t.Fatal(e)
			}
			r := (&Generator{Tok: tk, Req: req, Prompt: p, IDs: []int32{1}, Max: len(ids)}).Reply(0)
			var got []TokenInternals
			held := false
			collect := func(d Delta, end bool) {
				if d.Internals == nil {
					return
				}
				got = append(got, d.Internals.Tokens...)
				held = held || d.Content == "" && !end
			}
			var want []TokenInternals
			for j, id := range ids {
				if tt.probe {
					ti := TokenInternals{Index: j, ID: id, Text: tk.Display(id)}
					want = append(want, ti)
					r.Probe(ti)
				}
				d, _ := r.Token(id, nil)
				collect(d, tk.IsEOG(id))
			}
			d, c := r.End(stop.EOS)
			collect(d, true)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the deltas' internals (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, c.Internals); diff != "" {
				t.Errorf("the choice's internals (-want +got):\n%s", diff)
			}
			if held != tt.held || !slices.Equal(c.IDs, ids) {
				t.Errorf("a delta of internals alone: %v, want %v; ids %v", held, tt.held, c.IDs)
			}
		})
	}
}

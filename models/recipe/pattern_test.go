package recipe

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/models/corpus"
)

// Held-out cases are counted under their own pattern, in HeldMiddles'
// order, whole names and first pieces apart.
func TestCountPattern(t *testing.T) {
	ps := corpus.HeldMiddles()
	var b CopyingBars
	for _, c := range []struct {
		pattern   string
		ok, first bool
	}{{ps[1], true, true}, {ps[1], false, true}, {ps[3], true, false}, {ps[1], false, false}} {
		b.countPattern(corpus.Doc{Pattern: c.pattern}, completion{ok: c.ok, firstOK: c.first})
	}
	want := make([]PatternRate, len(ps))
	for i, p := range ps {
		want[i].Pattern = p
	}
	want[1].Cases, want[1].Hits, want[1].First = 3, 1, 2
	want[3].Cases, want[3].Hits = 1, 1
	if diff := cmp.Diff(want, b.ByPattern); diff != "" {
		t.Errorf("by pattern (-want +got):\n%s", diff)
	}
}

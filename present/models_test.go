package present

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"stepthrough/hfhub"
)

func TestThousands(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0"}, {64, "64"}, {999, "999"}, {1000, "1,000"}, {4096, "4,096"}, {40960, "40,960"}, {1048576, "1,048,576"}} {
		t.Run(c.want, func(t *testing.T) {
			if got := thousands(c.n); got != c.want {
				t.Errorf("thousands(%d) = %q", c.n, got)
			}
		})
	}
}

// A pull says its progress while it runs, then how it ended: done
// (fetched now or found in the cache), cancelled with the bytes kept, or
// failed with the reason.
func TestPullStatus(t *testing.T) {
	done := &hfhub.Result{File: "m-Q8_0.gguf", Size: 2 << 20, Why: "Q8_0 fits", Name: "org/m:Q8_0", Fetched: 2 << 20}
	cached := *done
	cached.Fetched = 0
	for _, c := range []struct {
		name, state, text string
		p                 PullState
	}{
		{"listing", "running", "Listing the repository's files and checking the file's header…", PullState{Ref: "org/m"}},
		{"running", "running", "1.0 MiB of 4.0 MiB (25%), 512.0 KiB/s, about 6s left", PullState{Ref: "org/m", Done: 1 << 20, Total: 4 << 20, Fetched: 1 << 20, Elapsed: 2 * time.Second}},
		{"done", "done", "m-Q8_0.gguf (2.0 MiB, Q8_0 fits) is in the cache, offered as org/m:Q8_0.", PullState{Ref: "org/m", Ended: true, Result: done}},
		{"cached", "done", "m-Q8_0.gguf (2.0 MiB, Q8_0 fits) was in the cache already, offered as org/m:Q8_0.", PullState{Ref: "org/m", Ended: true, Result: &cached}},
		{"cancelled", "cancelled", "Cancelled after 1.0 MiB of 4.0 MiB; the bytes fetched are kept, and the next pull continues from them.", PullState{Ref: "org/m", Done: 1 << 20, Total: 4 << 20, Ended: true, Err: fmt.Errorf("pull: %w", context.Canceled)}},
		{"failed", "failed", "no such repository", PullState{Ref: "org/m", Ended: true, Err: errors.New("no such repository")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := PullStatus(c.p)
			if s.State != c.state || s.Text != c.text || s.Ref != "org/m" {
				t.Errorf("%s: %q; want %s: %q", s.State, s.Text, c.state, c.text)
			}
		})
	}
}

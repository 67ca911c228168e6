package server

import (
	"net/http"
	"testing"
)

// A finished /serving run leaves the heap near where it was: the run's
// page keeps its reports and events, not its KV caches (here a paged pool
// of 16 users × 488 positions, about 46 MiB, which the shared model once
// kept through its last batch).
func TestServingRunReleasesItsCaches(t *testing.T) {
	s, ts := servingServer(t)
	if _, err := s.reg.Engine("lesson.gguf", "auto"); err != nil { // the model stays loaded: part of the baseline
		t.Fatal(err)
	}
	before := heapInUse()
	form := servingForm(16, 480, 8, 8, 16, "static", "paged", "on", "")
	form.Set("ignore_eos", "on")
	path, code, msg := postServing(t, ts, form, ts.URL)
	if code != http.StatusSeeOther {
		t.Fatalf("POST: %d %s", code, msg)
	}
	readEvents(t, ts, path)
	const margin = 16 << 20
	if after := heapInUse(); after > before+margin {
		t.Errorf("heap in use: %d MiB before the run, %d MiB after it (allowed: %d MiB more)", before>>20, after>>20, margin>>20)
	}
}

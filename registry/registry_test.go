package registry

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"stepthrough/models"
)

// A model whose load is slow (here a file that is a pipe nobody writes
// yet: opening it waits) blocks only the sessions that want that model:
// every other model is looked up, loaded and prepared meanwhile, and the
// callers waiting for the slow one share its one load.
func TestSlowLoadBlocksOnlyItsModel(t *testing.T) {
	dir := t.TempDir()
	slow := filepath.Join(dir, "slow.gguf")
	if err := syscall.Mkfifo(slow, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	reg := New([]string{dir})
	reg.AddEmbedded("lesson.gguf", models.Lesson)
	t.Cleanup(reg.Close)

	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 { // three sessions want the slow model at once
		wg.Go(func() {
			_, err := reg.Engine("slow.gguf", "cpu")
			errs <- err
		})
	}
	time.Sleep(100 * time.Millisecond) // the loads are waiting on the pipe

	done := make(chan error, 1)
	go func() {
		_, err := reg.Engine("lesson.gguf@Q8_0", "cpu") // a load and a conversion of another model
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("another model's lookup waited for the slow load")
	}
	if n := reg.Names(); len(n) != 2 {
		t.Errorf("offered %v", n)
	}

	// The pipe opens and closes empty: the one load fails, and all three
	// callers get its error.
	w, err := os.OpenFile(slow, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err == nil {
			t.Error("an empty file loaded")
		}
	}
}

// A file added by a name of its own (the Hugging Face cache's
// ORG/REPO:QUANT, a '/' in it) is offered, loaded and converted by that
// name; a name already offered keeps its model.
func TestAddFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(path, models.Lesson, 0o644); err != nil {
		t.Fatal(err)
	}
	reg := New(nil)
	reg.AddEmbedded("lesson.gguf", models.Lesson)
	reg.AddFile("org/lesson-GGUF:F32", path)
	reg.AddFile("lesson.gguf", filepath.Join(t.TempDir(), "missing.gguf"))
	t.Cleanup(reg.Close)
	if d := cmp.Diff([]string{"lesson.gguf", "org/lesson-GGUF:F32"}, reg.Names()); d != "" {
		t.Errorf("Names (-want +got):\n%s", d)
	}
	for _, name := range []string{"org/lesson-GGUF:F32", "org/lesson-GGUF:F32@Q8_0", "lesson.gguf"} {
		if _, err := reg.Engine(name, "cpu"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if got, err := reg.Resolve("org/lesson-GGUF:F32@q8_0"); err != nil || got != "org/lesson-GGUF:F32@Q8_0" {
		t.Errorf("Resolve = %q, %v", got, err)
	}
	if _, err := reg.Get("org/lesson-GGUF"); err == nil {
		t.Errorf("a name never offered loaded")
	}
}

// Package reftest locates the shared reference data (../shared/reference
// beside the checkout) for tests, and decides whether a missing file is a
// skip or, under REQUIRE_REFERENCE=1, a failure.
package reftest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir returns the reference directory, or skips (fails under
// REQUIRE_REFERENCE=1) when it is absent. STEPTHROUGH_REFERENCE overrides
// the location.
func Dir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("STEPTHROUGH_REFERENCE")
	if dir == "" {
		_, file, _, _ := runtime.Caller(0)
		// engine/reftest/reftest.go -> repo root -> ../shared/reference
		dir = filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "reference")
	}
	if _, err := os.Stat(dir); err != nil {
		Missing(t, "reference data not found at "+dir+" (set STEPTHROUGH_REFERENCE)")
	}
	return dir
}

// Path joins elements under the reference directory and checks the file exists.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{Dir(t)}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		Missing(t, "reference file missing: "+p)
	}
	return p
}

// Missing skips the test, or fails it when REQUIRE_REFERENCE=1.
func Missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("REQUIRE_REFERENCE") == "1" {
		t.Fatalf("REQUIRE_REFERENCE=1: %s", why)
	}
	t.Skip(why)
}

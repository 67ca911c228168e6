package vulkan

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The committed SPIR-V must be what the committed GLSL compiles to. Runs
// when glslc is installed (CI installs it); else skips with the reason.
func TestSPIRVFresh(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		if os.Getenv("REQUIRE_VULKAN") == "1" {
			t.Fatal("REQUIRE_VULKAN=1: glslc not installed, cannot check the committed SPIR-V")
		}
		t.Skip("glslc not installed: cannot check that shaders/spv matches shaders/*.comp")
	}
	tmp := t.TempDir()
	copyFile(t, filepath.Join("shaders", "build.sh"), filepath.Join(tmp, "build.sh"))
	comps, _ := filepath.Glob("shaders/*.comp")
	includes, _ := filepath.Glob("shaders/*.glsl")
	for _, f := range append(comps, includes...) {
		copyFile(t, f, filepath.Join(tmp, filepath.Base(f)))
	}
	if out, err := exec.Command("sh", filepath.Join(tmp, "build.sh")).CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	fresh, _ := filepath.Glob(filepath.Join(tmp, "spv", "*.spv"))
	committed, _ := filepath.Glob("shaders/spv/*.spv")
	if len(fresh) != len(committed) {
		t.Fatalf("%d shaders compile, %d committed: run `go tool task shaders` and commit", len(fresh), len(committed))
	}
	for _, f := range fresh {
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Join("shaders", "spv", filepath.Base(f)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("shaders/spv/%s is stale: run `go tool task shaders` and commit", filepath.Base(f))
		}
	}
}

func copyFile(t *testing.T, src, dst string) {
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/models/recipe"
)

// models/README.md is what its reports render to: a report changed by
// hand (a copying model's earlier runs) or a template changed without
// rerunning train-lesson --readme-only shows here.
func TestModelsREADMEIsFresh(t *testing.T) {
	src := filepath.Join("..", "models")
	dir := t.TempDir()
	for _, name := range []string{"report.json", "family-report.json", "copying-report.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := recipe.ReadReport(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := writeREADME(dir, rep); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(src, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("models/README.md is stale (run go run . train-lesson --readme-only, and with --copying) (-committed +rendered):\n%s", diff)
	}
}

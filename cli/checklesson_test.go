package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// check-lesson fails a step whose interventions the model lacks even when
// the step claims nothing, and passes one within the model.
func TestCheckLessonInterventions(t *testing.T) {
	for _, tt := range []struct {
		name, setting, out, err string
		code                    int
	}{
		{"no claims, a layer past the model", "ablate: L99H1", "FAIL bad.md:5: intervention L99H1: the model has layers 1 to 4 in lesson.gguf\n",
			"stepthrough check-lesson: 1 of 1 checks failed (claims that do not hold, lessons that do not fit their model)\n", 1},
		{"no claims, within the model", "ablate: L4H1", "bad.md: 0 claims\n", "", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "bad.md")
			if err := os.WriteFile(path, []byte("---\ntitle: T\nmodel: lesson.gguf\n---\n## S\nprompt: Once upon a time\n"+tt.setting+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			out, errOut, code := run(t, "check-lesson", "--models-dir", dir, "bad.md")
			if diff := cmp.Diff([]any{tt.out, tt.err, tt.code}, []any{out, errOut, code}); diff != "" {
				t.Errorf("stdout, stderr, exit (-want +got):\n%s", diff)
			}
		})
	}
}

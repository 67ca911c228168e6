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
		{"no claims, a layer past the model", "ablate: L99H1", "FAIL bad.md:5: ablate: intervention L99H1: the model has layers 1 to 4 in lesson.gguf\n",
			"stepthrough check-lesson: 1 of 1 checks failed (claims that do not hold, lessons that do not fit their model, questions answered before they are asked, general statements with no source or claim)\n", 1},
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

// check-lesson fails a question whose answer the text before it states
// (here the step before's explanation), naming the step and the words.
func TestCheckLessonSpoilers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "spoils.md")
	src := "---\ntitle: T\nmodel: lesson.gguf\n---\n## One\nprompt: Once upon a time\nTemperature only sharpens or flattens the same ranking.\n" +
		"## Two\n? choice: What does temperature do to the ranking of tokens?\n- Low temperature moves rare tokens to the top\n- (x) Nothing: it only sharpens or flattens the same ranking\n- High temperature removes tokens\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	out, errOut, code := run(t, "check-lesson", "--models-dir", dir, "spoils.md")
	want := "FAIL spoils.md:8: step 2 (\"Two\"): step 1 (\"One\"), the step before gives away the right choice \"Nothing: it only sharpens or flattens the same ranking\": the text has [flatten sharpen] of its distinctive words before \"What does temperature do to the ranking of tokens?\"\nspoils.md: 0 claims\n"
	if diff := cmp.Diff([]any{want, 1}, []any{out, code}); diff != "" || errOut == "" {
		t.Errorf("stdout, exit (-want +got):\n%s\nstderr %q", diff, errOut)
	}
}

// check-lesson fails a sentence that speaks of inference in general with
// neither a source nor a claim, at its line, and passes the same step
// once it cites a source.
func TestCheckLessonUnsourced(t *testing.T) {
	const head = "---\ntitle: T\nmodel: lesson.gguf\n---\n## One\nprompt: Once upon a time\n"
	for _, tt := range []struct {
		name, body, out string
		code            int
	}{
		{"unsourced", "A first sentence.\nGPU servers always batch.\n",
			"FAIL general.md:8: step 1: \"GPU servers always batch.\" says \"gpu\" of inference in general, with no source: line on its step and no expect: claim behind it: cite its source, or say it of this model or engine and claim it\ngeneral.md: 0 claims\n", 1},
		{"sourced", "source: Kwon et al. (SOSP 2023)\nA first sentence.\nGPU servers always batch.\n", "general.md: 0 claims\n", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "general.md"), []byte(head+tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			out, _, code := run(t, "check-lesson", "--models-dir", dir, "general.md")
			if diff := cmp.Diff([]any{tt.out, tt.code}, []any{out, code}); diff != "" {
				t.Errorf("stdout, exit (-want +got):\n%s", diff)
			}
		})
	}
}

package cpu

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
	"stepthrough/models"
)

// lessonPrompt is a story the lesson models copy a name from: every
// layer's attention and MLP at work over 40 positions.
const lessonPrompt = `Once upon a time, there was a happy dog named Zorvik. He had a red ball. One day, he went to the park. "Where is my ball?" asked`

// The embedded trained models give llama.cpp's logits, and its top token,
// at every position of a story: lesson-qwen3.gguf (qwen3, trained by engine/train) within
// 1e-4 of the logits' scale, lesson.gguf (gpt2) within 2e-3, since
// llama.cpp's GELU reads a table of fp16 inputs. The references are made
// by tools/llamaref/make.sh; a retrained model needs them made again.
func TestLessonModelsMatchLlamaCpp(t *testing.T) {
	dir := filepath.Join("testdata", "llamacpp", "lesson")
	for name, tol := range map[string]float64{"lesson-qwen3.gguf": 1e-4, "lesson.gguf": 2e-3} {
		t.Run(name, func(t *testing.T) {
			data := models.Embedded()[name]
			sum := sha256.Sum256(data)
			f, err := gguf.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			m, err := model.FromFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if *llamacppDump != "" {
				writeLessonRef(t, dir, name, m, data, hex.EncodeToString(sum[:]))
			}
			ref := readLlamaCppRef(t, filepath.Join(dir, name+".json"), "models/"+name, sum)
			want := readF32(t, filepath.Join(dir, name+".logits.f32"))
			got := forwardAll(t, m, Options{Threads: 2, Context: 256}, ref.Tokens)
			if len(got) != len(want) {
				t.Fatalf("%d logits, llama.cpp gave %d", len(got), len(want))
			}
			worst, scale := logitsDiff(got, want)
			V := m.Config.Vocab
			for p := range len(ref.Tokens) {
				if a, b := sample.Argmax(got[p*V:(p+1)*V]), sample.Argmax(want[p*V:(p+1)*V]); a != b {
					t.Errorf("position %d: top token %d, llama.cpp's %d", p, a, b)
				}
			}
			t.Logf("%d positions: max |engine - llama.cpp| = %.3g (logits up to %.3g)", len(ref.Tokens), worst, scale)
			if worst > tol*max(1, scale) {
				t.Errorf("max |engine - llama.cpp| = %g > %g × %g", worst, tol, max(1, scale))
			}
		})
	}
}

// writeLessonRef runs dumplogits on the embedded file and stores its
// logits with the tokens, hash and commit.
func writeLessonRef(t *testing.T, dir, name string, m *model.Model, file []byte, sum string) {
	t.Helper()
	if *llamacppCommit == "" {
		t.Fatal("-llamacpp-commit is required with -llamacpp-dump")
	}
	ids := m.Tokenizer.EncodeIDs(lessonPrompt, true)
	dumpLlamaCpp(t, file, filepath.Join(dir, name+".logits.f32"), ids, m.Config.Vocab)
	b, err := json.MarshalIndent(llamacppRef{SHA256: sum, Tokens: ids, Commit: *llamacppCommit}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

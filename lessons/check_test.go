package lessons

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A step's interventions are checked against the model's shape whether
// or not the step claims anything (lesson.gguf: 4 layers, 6 heads, 768
// MLP units).
func TestCheckInterventions(t *testing.T) {
	m := lessonModel(t)
	for _, tt := range []struct {
		name, setting, want string
	}{
		{"layer past the model", "ablate: L99H1", "t.md:5: ablate: intervention L99H1: the model has layers 1 to 4 in lesson.gguf"},
		{"head past the model", "ablate: L1H7", "t.md:5: ablate: intervention L1H7: the model has heads 1 to 6 in lesson.gguf"},
		{"unit past the model", "ablate: L2U769", "t.md:5: ablate: intervention L2U769: the model has MLP units 1 to 768 in lesson.gguf"},
		{"steering past the model", "steer: L5:happy|sad*4", "t.md:5: steer: steering after layer 5: the model has layers 1 to 4 in lesson.gguf"},
		{"within the model", "ablate: L4H6;L2U768;L1mlp\nsteer: L4:happy|sad*4", ""},
		{"a patch as long as the prompt", "prompt: \"The capital of France is\"\npatch: \"The capital of Japan is\"", ""},
		{"a patch of another length", "prompt: \"The capital of France is\"\npatch: \"The capital of Spain is\"", "t.md:5: patch \"The capital of Spain is\" is 6 tokens in lesson.gguf and the step's prompt 8: patching needs prompts of the same length"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Parse("t.md", []byte("---\ntitle: T\nmodel: lesson.gguf\n---\n## S\nprompt: x\n"+tt.setting+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if err := Check(l, m); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
		})
	}
}

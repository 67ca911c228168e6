package lessons

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// No built-in lesson states a fact about inference in general without
// its source, or one about this engine without a claim behind it.
func TestNoBuiltinLessonGeneralisesUnsourced(t *testing.T) {
	all, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Names(all) {
		t.Run(name, func(t *testing.T) {
			for _, u := range UnsourcedGeneral(all[name]) {
				t.Error(u)
			}
		})
	}
}

// A sentence that generalises is reported at its line unless its step
// cites a source, or it says it is about this model or engine and the
// step claims something the engine checks; quoted words and sentences
// without such words pass.
func TestUnsourcedGeneral(t *testing.T) {
	const head = "---\ntitle: T\nmodel: lesson.gguf\n---\n## S\nprompt: \"The capital of France is\"\n"
	for _, tt := range []struct {
		name, step string
		want       []string // the words reported
		line       int      // the first report's line
	}{
		{"always, unsourced", "The same request always gets the same answer.\n", []string{"always"}, 7},
		{"GPUs", "A model runs faster on a GPU.\n", []string{"gpu"}, 7},
		{"servers", "Most servers batch requests.\n", []string{"servers"}, 7},
		{"providers", "Providers charge more for output.\n", []string{"providers"}, 7},
		{"cannot", "A user who types the markers cannot forge a turn.\n", []string{"cannot"}, 7},
		{"all models", "This holds for all models.\n", []string{"all models"}, 7},
		{"the second sentence, on its line", "A first sentence.\nThen a second one that never\nends here.\n", []string{"never"}, 8},
		{"after the question", "Look.\n? choice: Why?\n- (x) A\n- B\nIt always does.\n", []string{"always"}, 11},
		{"two sentences", "Every layer runs. GPUs are fast.\n", []string{"every", "gpus"}, 7},
		{"with a source", "source: Thinking Machines Lab (2025): batch-dependent reductions\nGPU servers usually differ from run to run.\n", nil, 0},
		{"scoped and claimed", "expect: tokens 8\nEvery layer of this model reads the whole prompt.\n", nil, 0},
		{"scoped, no claim", "Every layer of this model reads the whole prompt.\n", []string{"every"}, 7},
		{"claimed, not scoped", "expect: tokens 8\nEvery model reads the whole prompt.\n", []string{"every"}, 8},
		{"on this engine", "expect: batched 8\nOn this engine the same request always gets the same answer.\n", nil, 0},
		{"quoting the question", "The choice \"It is always kept\" is wrong.\n", nil, 0},
		{"a quoted sentence ending inside", "It wrote \"Never. Always.\" and stopped.\n", nil, 0},
		{"nothing general", "The model writes the name's first piece, then the rest.\n", nil, 0},
		{"a word inside another", "Everest is tall; the server is this one.\n", nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Parse("t.md", []byte(head+tt.step))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			us := UnsourcedGeneral(l)
			for _, u := range us {
				got = append(got, u.Word)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("words reported (-want +got):\n%s", diff)
			}
			if len(us) > 0 && us[0].Line != tt.line {
				t.Errorf("reported at line %d, want %d: %s", us[0].Line, tt.line, us[0])
			}
		})
	}
}

// Prose is cut into sentences at full stops, question and exclamation
// marks followed by a space or a line's end, not inside a quotation and
// not in a number or a file name; each keeps the line it starts on.
func TestSentences(t *testing.T) {
	prose := []ProseLine{{Line: 3, Text: "It is 0.9 of it. See models/README.md for"}, {Line: 4, Text: "the rest! Is \"Stop. Go.\" one?"}, {Line: 5, Text: "After.", After: true}}
	want := []sentence{{3, "It is 0.9 of it."}, {3, "See models/README.md for the rest!"}, {4, "Is \"Stop. Go.\" one?"}, {5, "After."}}
	if diff := cmp.Diff(want, sentences(prose), cmp.AllowUnexported(sentence{})); diff != "" {
		t.Errorf("sentences (-want +got):\n%s", diff)
	}
}

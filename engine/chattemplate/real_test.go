package chattemplate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/gguf"
	"stepthrough/engine/reftest"
)

// The chat templates stored in real vocabularies (Qwen3's, with its
// reasoning and tool branches; Gemma's) render a conversation in their
// families' formats.
func TestStoredTemplatesOfRealVocabularies(t *testing.T) {
	for _, c := range []struct {
		vocab, bos, eos string
		want            []string
	}{
		{"qwen2", "<|endoftext|>", "<|im_end|>", []string{"<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n" +
			"<|im_start|>assistant\nParis.<|im_end|>\n<|im_start|>user\nAnd of Spain?<|im_end|>\n<|im_start|>assistant\n"}},
		{"gemma-4", "<bos>", "<end_of_turn>", []string{"<bos><start_of_turn>user\nYou are a helpful assistant.\n\nWhat is the capital of France?<end_of_turn>\n" +
			"<start_of_turn>model\nParis.<end_of_turn>\n<start_of_turn>user\nAnd of Spain?<end_of_turn>\n<start_of_turn>model\n"}},
	} {
		t.Run(c.vocab, func(t *testing.T) {
			f, err := gguf.Open(reftest.Path(t, "vocab", "ggml-vocab-"+c.vocab+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			v, ok := f.Get("tokenizer.chat_template")
			if !ok {
				t.Skipf("%s has no stored chat template", c.vocab)
			}
			tm, err := New(v.V.(string), c.bos, c.eos)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tm.Render(conversation, nil, true)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.Join(c.want, ""), got); diff != "" {
				t.Errorf("rendered (-want +got):\n%s", diff)
			}
		})
	}
}

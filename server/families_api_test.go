package server

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/openai/openai-go/v3"

	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/engine/reftest"
)

// A qwen3 file with Qwen's real tokenizer and stored chat template (random
// weights) answers the official client: the prompt is the template's
// ChatML with <|im_start|> and <|im_end|> parsed as their control
// tokens, and a reply comes back.
func TestFamilyThroughTheAPI(t *testing.T) {
	vf, err := gguf.Open(reftest.Path(t, "vocab", "ggml-vocab-qwen2.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer vf.Close()
	dir := t.TempDir()
	w, err := model.Synthesize(model.SynthOptions{Arch: "qwen3", Embd: 32, Layers: 1, Heads: 2, KVHeads: 1, HeadDim: 16, FFN: 64, Context: 256, Type: quant.Q8_0, Tied: true, VocabFrom: vf})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(filepath.Join(dir, "qwen3-tiny.gguf")); err != nil {
		t.Fatal(err)
	}
	client, _ := apiServer(t, Config{ModelsDirs: []string{dir}})
	res, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:     "qwen3-tiny.gguf",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are terse."), openai.UserMessage("Hi")},
		MaxTokens: openai.Int(4), Temperature: openai.Float(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	// <|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n
	// with each marker one control token: system turn 1+1+1+4+1+1, user turn 1+1+1+1+1+1, 1+1+1 = 18
	if res.Usage.PromptTokens != 18 || res.Usage.CompletionTokens < 1 || len(res.Choices) != 1 {
		t.Errorf("usage %+v, %d choices", res.Usage, len(res.Choices))
	}
}

package lessons

import (
	"embed"
	"io/fs"
	"slices"
	"sort"
	"strings"
)

//go:embed builtin/*.md
var builtinFS embed.FS

// Builtin parses the lessons that ship with Stepthrough, by file name
// without the .md extension.
func Builtin() (map[string]*Lesson, error) {
	out := map[string]*Lesson{}
	entries, err := fs.ReadDir(builtinFS, "builtin")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		b, err := builtinFS.ReadFile("builtin/" + e.Name())
		if err != nil {
			return nil, err
		}
		l, err := Parse("lessons/builtin/"+e.Name(), b)
		if err != nil {
			return nil, err
		}
		out[strings.TrimSuffix(e.Name(), ".md")] = l
	}
	return out, nil
}

// Path is the suggested order of the built-in lessons: what inference
// is first, then a token's way through the model, sampling, the chat
// and tool formats, and the costs of serving.
var Path = []string{
	"what-is-inference", "the-lesson-model", "tokens", "embeddings", "attention-copies-names", "prefill-and-decode", "kv-cache",
	"logits-and-softmax", "what-each-layer-thinks", "where-the-answer-lives", "the-head-that-copies", "two-families", "temperature", "samplers", "seeds",
	"chat-and-stop-tokens", "stop-conditions", "tool-calls", "reasoning-tokens", "tool-loop-api", "api-vs-inference",
	"speculative-decoding", "quantization", "where-quantization-bites", "cpu-and-gpu", "what-a-token-costs", "many-users-one-model", "continuous-batching-and-memory", "what-a-task-costs",
}

// Names lists lesson names in order: those on the suggested Path first,
// in its order, then any others alphabetically.
func Names(m map[string]*Lesson) []string {
	var n, rest []string
	for _, k := range Path {
		if _, ok := m[k]; ok {
			n = append(n, k)
		}
	}
	for k := range m {
		if !slices.Contains(Path, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(n, rest...)
}

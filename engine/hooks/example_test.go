package hooks_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"stepthrough/engine"
	"stepthrough/engine/gguf"
	"stepthrough/engine/hooks"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
	"stepthrough/models"
)

// lessonSession opens the embedded lesson model (gpt2 architecture, 4
// layers, a vocabulary of 1024) in a session of its own on the CPU.
func lessonSession() (*model.Model, *engine.Session) {
	f, err := gguf.Parse(models.Lesson)
	if err != nil {
		log.Fatal(err)
	}
	m, err := model.FromFile(f)
	if err != nil {
		log.Fatal(err)
	}
	s, err := engine.NewSession(m, engine.Options{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	return m, s
}

// Hooks ride in the context: every forward pass run with it calls them.
// Here one set counts the attention blocks and notes each pass's new
// tokens; a second set, composed with WithHooks, sees the same passes.
// The prompt is read in one pass, then each generated token but the last
// in a pass of its own, through all 4 layers.
func ExampleWithHooks() {
	m, s := lessonSession()
	defer m.Close()
	defer s.Close()

	attention := 0
	var passes []string
	counter := &hooks.Hooks{
		OnAttention: func(a hooks.Attention) {
			attention++
			if a.Layer == 0 { // once per pass
				passes = append(passes, fmt.Sprintf("%d at %d", a.N, a.Pos0))
			}
		},
	}
	mlp := 0
	ctx := hooks.WithHooks(context.Background(), counter)
	ctx = hooks.WithHooks(ctx, &hooks.Hooks{OnMLP: func(hooks.MLP) { mlp++ }})

	prompt := s.Tokenize(ctx, "The capital of France is", true)
	var out []int32
	if err := s.Greedy(ctx, prompt, 3, func(id int32) error { out = append(out, id); return nil }); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("generated %q\n", m.Tokenizer.Decode(out))
	fmt.Println("passes (new tokens at position):", strings.Join(passes, ", "))
	fmt.Println("attention blocks:", attention, "feed-forward blocks:", mlp)
	// Output:
	// generated " Paris."
	// passes (new tokens at position): 8 at 0, 1 at 8, 1 at 9
	// attention blocks: 12 feed-forward blocks: 12
}

// OnLogits reads the raw logits of each pass (the last position's unless
// every position was asked for), before the sampler chain; OnSample sees
// the choice. The slices are the engine's own buffers: read them in the
// callback, copy what you keep.
func ExampleHooks_logits() {
	m, s := lessonSession()
	defer m.Close()
	defer s.Close()
	tok := m.Tokenizer

	h := &hooks.Hooks{
		OnLogits: func(l hooks.Logits) {
			last := l.Logits[(l.Rows-1)*l.Vocab:]
			p := sample.Probabilities(last, 1)
			fmt.Printf("logits: %d row of %d\n", l.Rows, l.Vocab)
			for _, id := range sample.TopN(p, 3) {
				fmt.Printf("  %-9q p = %.2f\n", tok.Bytes(id), p[id])
			}
		},
		OnSample: func(d sample.DrawResult) {
			fmt.Printf("chosen %q (greedy %v, %d candidate)\n", tok.Bytes(d.Chosen), d.Greedy, len(d.Candidates))
		},
	}
	ctx := hooks.WithHooks(context.Background(), h)
	if err := s.Greedy(ctx, s.Tokenize(ctx, "Once upon a time, there was a", true), 1, func(int32) error { return nil }); err != nil {
		log.Fatal(err)
	}
	// Output:
	// logits: 1 row of 1024
	//   " quiet"  p = 0.12
	//   " small"  p = 0.11
	//   " clever" p = 0.11
	// chosen " quiet" (greedy true, 1 candidate)
}

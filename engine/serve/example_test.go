package serve_test

import (
	"context"
	"fmt"
	"log"

	"stepthrough/engine"
	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
	"stepthrough/engine/serve"
	"stepthrough/models"
)

// Two chat requests served together on the embedded lesson model. Both are
// queued before Run starts, so the first step reads both prompts in one
// batched pass, and every step after it decodes one token of each request
// that is still running. Each streams its text and ends with a Done event
// giving the reason.
func ExampleScheduler() {
	f, err := gguf.Parse(models.Lesson)
	if err != nil {
		log.Fatal(err)
	}
	m, err := model.FromFile(f)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	l, err := engine.Load(m, engine.Options{Backend: "cpu", Threads: 1, Context: 128})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	s, err := serve.New(l, serve.Options{Policy: serve.Static, MaxSeqs: 2})
	if err != nil {
		log.Fatal(err)
	}
	greedy := sample.Defaults()
	greedy.Temperature, greedy.SeedSet = 0, true
	var hs []*serve.Handle
	for _, q := range []string{"What is the capital of Japan?", "What is the capital of France?"} {
		prompt := m.Tokenizer.EncodeSpecial("<|user|>"+q+"<|end|><|assistant|>", true)
		h, err := s.Submit(serve.Request{Prompt: prompt, MaxTokens: 32, Sampling: greedy})
		if err != nil {
			log.Fatal(err)
		}
		hs = append(hs, h)
	}

	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	for _, h := range hs {
		text := ""
		for ev := range h.Events {
			text += ev.Text
			if ev.Done {
				fmt.Printf("request %d: %q (%s)\n", h.ID, text, ev.Finish)
			}
		}
	}
	stop()
	<-done

	// The steps the scheduler recorded: which request fed how many tokens.
	steps := s.Steps()
	for _, st := range steps[:2] {
		fmt.Printf("step %d:", st.Index)
		for _, p := range st.Parts {
			kind := "decode"
			if p.Prefill {
				kind = "prompt"
			}
			fmt.Printf(" request %d %s %d;", p.Req, kind, p.Tokens)
		}
		fmt.Println()
	}
	// Request 2's reply is two tokens shorter: it leaves the batch, and
	// the last steps decode request 1 alone.
	fmt.Print("tokens per step:")
	for _, st := range steps {
		fmt.Print(" ", st.Tokens())
	}
	fmt.Println()
	// Output:
	// request 1: "The capital of Japan is Tokyo." (eos)
	// request 2: "The capital of France is Paris." (eos)
	// step 0: request 1 prompt 13; request 2 prompt 13;
	// step 1: request 1 decode 1; request 2 decode 1;
	// tokens per step: 26 2 2 2 2 2 2 2 2 2 2 1 1
}

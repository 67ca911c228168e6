package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"stepthrough/engine"
	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
	"stepthrough/models"
)

// lessonModel opens the lesson model embedded in the binary (models.Lesson);
// a file on disk opens with model.Load(path) instead.
func lessonModel() *model.Model {
	f, err := gguf.Parse(models.Lesson)
	if err != nil {
		log.Fatal(err)
	}
	m, err := model.FromFile(f)
	if err != nil {
		log.Fatal(err)
	}
	return m
}

// Load prepares a model once; every session made from it shares the
// weights and holds only its own KV cache. Generate reads the prompt and
// samples the reply with a sampler chain, here greedy (temperature 0), so
// the reply is the same on every run.
func ExampleLoad() {
	m := lessonModel()
	defer m.Close()
	l, err := engine.Load(m, engine.Options{Backend: "cpu", Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	fmt.Println("backend:", l.Backend().Name)

	s, err := l.NewSession(0)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	ctx := context.Background()
	// The lesson model's chat format: its control tokens are parsed from
	// the text, and BOS is added.
	prompt := s.TokenizeSpecial(ctx, "<|user|>What is the capital of Japan?<|end|><|assistant|>", true)

	p := sample.Defaults()
	p.Temperature, p.SeedSet = 0, true // greedy: always the most likely token
	smp, err := sample.New(p)
	if err != nil {
		log.Fatal(err)
	}
	var reply []int32
	err = s.Generate(ctx, prompt, 32, smp, func(id int32) error {
		reply = append(reply, id)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	tok := m.Tokenizer
	last := reply[len(reply)-1]
	fmt.Printf("reply: %q\n", tok.Decode(reply[:len(reply)-1]))
	fmt.Printf("ended with %s (end of generation: %v)\n", tok.Piece(last), tok.IsEOG(last))
	// The cache holds the prompt and every reply token but the last,
	// which was sampled and never read back.
	fmt.Printf("prompt %d tokens, reply %d tokens, cache %d positions\n", len(prompt), len(reply), s.Pos())
	// Output:
	// backend: cpu
	// reply: "The capital of Japan is Tokyo."
	// ended with <|end|> (end of generation: true)
	// prompt 13 tokens, reply 13 tokens, cache 25 positions
}

// Greedy is Generate with temperature 0. NewSession loads a model for one
// session alone (on the CPU unless Options.Backend says otherwise).
func ExampleSession_Greedy() {
	m := lessonModel()
	defer m.Close()
	s, err := engine.NewSession(m, engine.Options{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	ctx := context.Background()
	prompt := s.Tokenize(ctx, "The capital of France is", true)
	var out []int32
	if err := s.Greedy(ctx, prompt, 3, func(id int32) error { out = append(out, id); return nil }); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d prompt tokens, then %q\n", len(prompt), m.Tokenizer.Decode(out))
	// Output:
	// 8 prompt tokens, then " Paris."
}

// Fork copies a session's KV cache (not the weights), so two
// continuations of one prompt read the prompt once. An emit function that
// returns an error stops a generation early; here at the end of a sentence.
func ExampleSession_Fork() {
	m := lessonModel()
	defer m.Close()
	s, err := engine.NewSession(m, engine.Options{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Eval(ctx, s.Tokenize(ctx, "The capital of", true)); err != nil {
		log.Fatal(err)
	}
	errSentence := errors.New("end of sentence")
	for _, country := range []string{" France is", " Japan is"} {
		f, err := s.Fork()
		if err != nil {
			log.Fatal(err)
		}
		var out []int32
		err = f.Greedy(ctx, f.Tokenize(ctx, country, false), 16, func(id int32) error {
			out = append(out, id)
			if strings.HasSuffix(m.Tokenizer.Piece(id), ".") {
				return errSentence
			}
			return nil
		})
		if err != nil && !errors.Is(err, errSentence) {
			log.Fatal(err)
		}
		fmt.Printf("The capital of%s%s\n", country, m.Tokenizer.Decode(out))
		f.Close()
	}
	fmt.Println("the first session is still at", s.Pos(), "positions")
	// Output:
	// The capital of France is Paris.
	// The capital of Japan is Tokyo.
	// the first session is still at 4 positions
}

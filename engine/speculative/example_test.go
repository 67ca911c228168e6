package speculative_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	"stepthrough/engine"
	"stepthrough/engine/gguf"
	"stepthrough/engine/hooks"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
	"stepthrough/engine/speculative"
	"stepthrough/models"
)

// open reads an embedded model file.
func open(b []byte) *model.Model {
	f, err := gguf.Parse(b)
	if err != nil {
		log.Fatal(err)
	}
	m, err := model.FromFile(f)
	if err != nil {
		log.Fatal(err)
	}
	return m
}

func session(m *model.Model) *engine.Session {
	s, err := engine.NewSession(m, engine.Options{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	return s
}

// The small lesson draft (2 layers, a tenth of the weights) proposes 4
// tokens a round and the lesson model checks them in one pass. Under
// greedy decoding the reply is the target's own greedy reply, token for
// token; the draft only changes how many target passes it takes.
func ExampleDecoder_Generate() {
	target, draft := open(models.Lesson), open(models.LessonDraft)
	defer target.Close()
	defer draft.Close()
	if err := speculative.SameVocabulary(target.Tokenizer, draft.Tokenizer); err != nil {
		log.Fatal(err)
	}

	greedy := sample.Defaults()
	greedy.Temperature, greedy.SeedSet = 0, true
	ts, ds := session(target), session(draft)
	defer ts.Close()
	defer ds.Close()
	d, err := speculative.New(ts, ds, greedy, greedy, speculative.Options{K: 4})
	if err != nil {
		log.Fatal(err)
	}

	// count the target's forward passes (the draft's run without hooks)
	passes := 0
	ctx := hooks.WithHooks(context.Background(), &hooks.Hooks{OnEmbed: func(hooks.Embed) { passes++ }})
	prompt := target.Tokenizer.EncodeSpecial("<|user|>What is the capital of Japan?<|end|><|assistant|>", true)
	var got []int32
	if err := d.Generate(ctx, prompt, 32, func(id int32) error { got = append(got, id); return nil }); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("reply: %q\n", target.Tokenizer.Decode(got))
	speculativePasses := passes

	// The target alone, greedy.
	alone := session(target)
	defer alone.Close()
	passes = 0
	var want []int32
	if err := alone.Greedy(ctx, prompt, 32, func(id int32) error { want = append(want, id); return nil }); err != nil {
		log.Fatal(err)
	}
	fmt.Println("same tokens as the target alone:", slices.Equal(got, want))

	// With the draft the target reads the prompt (all but its last
	// token) in one pass, then makes one pass a round over the draft's
	// proposals; alone it reads the prompt, then makes one pass for each
	// token but the last.
	st := d.Stats()
	fmt.Printf("%d tokens in %d rounds: %d of %d proposals kept\n", len(got), st.Rounds, st.Accepted, st.Drafted)
	fmt.Printf("target passes: %d with the draft, %d alone\n", speculativePasses, passes)
	// Output:
	// reply: "The capital of Japan is Tokyo."
	// same tokens as the target alone: true
	// 13 tokens in 5 rounds: 9 of 20 proposals kept
	// target passes: 6 with the draft, 13 alone
}

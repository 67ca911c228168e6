package server

import (
	"bufio"
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

// Concurrent streaming clients share forward passes: their tokens come
// from the same steps of the model's batch, each reply is the one the
// request gets alone, and the kept requests name each token's pass and
// batch-mates.
func TestAPIClientsShareForwardPasses(t *testing.T) {
	client, _, s := apiServerOf(t, Config{})
	ctx := context.Background()
	questions := []string{"What is the capital of France?", "Tell me a story about a dog.", "What is 2 + 3?", "Who was Lily?"}
	ask := func(q string) (string, string) {
		st := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model: "lesson.gguf", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(q)},
			Temperature: openai.Float(0), MaxTokens: openai.Int(24),
		})
		var acc openai.ChatCompletionAccumulator
		for st.Next() {
			acc.AddChunk(st.Current())
		}
		if err := st.Err(); err != nil || len(acc.Choices) == 0 {
			t.Errorf("%q: %v", q, err)
			return "", ""
		}
		return acc.ID, acc.Choices[0].Message.Content
	}
	alone := map[string]string{}
	for _, q := range questions {
		_, alone[q] = ask(q)
	}
	for round := range 3 { // a shared pass is all but certain in one round
		ids := make([]string, len(questions))
		var wg sync.WaitGroup
		for i, q := range questions {
			wg.Go(func() {
				id, text := ask(q)
				ids[i] = id
				if text != alone[q] {
					t.Errorf("%q in a batch: %q, alone: %q", q, text, alone[q])
				}
			})
		}
		wg.Wait()
		if n := sharedPasses(t, s, ids); n > 0 {
			t.Logf("round %d: %d passes computed tokens of several requests", round, n)
			return
		}
	}
	t.Error("four concurrent clients never shared a forward pass in three rounds")
}

// sharedPasses counts the passes that computed tokens of more than one of
// the kept requests ids, checking that each such token names the others
// as its batch-mates.
func sharedPasses(t *testing.T, s *Server, ids []string) int {
	t.Helper()
	mates := map[int]map[string][]string{} // pass → request → its mates
	for _, id := range ids {
		w := s.watched.get(id)
		if w == nil {
			t.Fatalf("request %s not kept", id)
		}
		for _, st := range w.Steps {
			if mates[st.Step] == nil {
				mates[st.Step] = map[string][]string{}
			}
			mates[st.Step][id] = st.Mates
		}
	}
	n := 0
	for pass, reqs := range mates {
		if len(reqs) < 2 {
			continue
		}
		n++
		for id, m := range reqs {
			for other := range reqs {
				if other != id && !slices.Contains(m, other) {
					t.Errorf("pass %d computed tokens of %s and %s, but %s's mates are %v", pass, id, other, id, m)
				}
			}
		}
	}
	return n
}

// A streaming client that goes away frees its sequence at the next step:
// the batch stops generating for it long before its token limit.
func TestAPIDisconnectFreesSequence(t *testing.T) {
	_, base, s := apiServerOf(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"model": "lesson.gguf", "prompt": "Once upon a time", "max_tokens": 400, "ignore_eos": true, "stream": true}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil { // the first chunk: generating
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	lm, _ := s.reg.Engine("lesson.gguf", "auto")
	sch, _ := s.batch("lesson.gguf", lm)
	deadline := time.Now().Add(10 * time.Second)
	for sch.Gauges().Running > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if g := sch.Gauges(); g.Running != 0 {
		t.Fatalf("the sequence still runs after its client left: %+v", g)
	}
	if tot := sch.Totals(); tot.Cancelled != 1 || tot.Generated >= 400 {
		t.Errorf("%d requests cancelled, %d tokens generated for a client that left after its first chunk", tot.Cancelled, tot.Generated)
	}
}

// A second request with the same long system prompt reads its full
// blocks from the prefix cache: usage reports them as cached tokens, as
// OpenAI does, and the reply is the same.
func TestAPIPrefixCacheUsage(t *testing.T) {
	client, _ := apiServer(t, Config{})
	ctx := context.Background()
	system := "You are a helpful assistant for a class of students. Answer in one short sentence, and be kind, clear and exact. Never make up facts."
	ask := func() *openai.ChatCompletion {
		res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:       "lesson.gguf",
			Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage("What is the capital of France?")},
			Temperature: openai.Float(0), MaxTokens: openai.Int(16),
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first, second := ask(), ask()
	if got := first.Usage.PromptTokensDetails.CachedTokens; got != 0 {
		t.Errorf("the first request reports %d cached tokens", got)
	}
	full := first.Usage.PromptTokens / apiBlockSize * apiBlockSize
	if full == first.Usage.PromptTokens {
		full -= apiBlockSize // the last prompt token is always computed
	}
	if got := second.Usage.PromptTokensDetails.CachedTokens; got != full {
		t.Errorf("the second request reports %d cached tokens of %d, want %d (its full blocks)", got, second.Usage.PromptTokens, full)
	}
	if a, b := first.Choices[0].Message.Content, second.Choices[0].Message.Content; a != b {
		t.Errorf("replies differ: %q then %q", a, b)
	}
}

// The API keeps a batch (and its KV cache) for at most apiMaxBatches
// models: asking a fifth stops the least recently used idle one, and a
// model asked again gets a fresh batch that answers the same.
func TestAPIBatchesBounded(t *testing.T) {
	client, _, s := apiServerOf(t, Config{})
	ctx := context.Background()
	ask := func(model string) string {
		res, err := client.Completions.New(ctx, openai.CompletionNewParams{Model: openai.CompletionNewParamsModel(model),
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")}, MaxTokens: openai.Int(4), Temperature: openai.Float(0)})
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		return res.Choices[0].Text
	}
	first := ask("lesson.gguf")
	for _, m := range []string{"lesson-draft.gguf", "lesson.gguf@Q8_0", "lesson.gguf@Q4_0", "lesson.gguf@Q4_K_M"} {
		ask(m)
	}
	running := s.apiBatch.all()
	if len(running) != apiMaxBatches {
		t.Errorf("%d batches running, want %d", len(running), apiMaxBatches)
	}
	if _, ok := running["lesson.gguf"]; ok {
		t.Error("the least recently used batch was not the one stopped")
	}
	if again := ask("lesson.gguf"); again != first {
		t.Errorf("asked again on a fresh batch: %q, first %q", again, first)
	}
}

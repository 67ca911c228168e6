package server

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"stepthrough/engine/chat"
)

// apiServer serves the embedded models on loopback and returns an official
// OpenAI client pointed at it.
func apiServer(t *testing.T, cfg Config) (openai.Client, string) {
	t.Helper()
	c, base, _ := apiServerOf(t, cfg)
	return c, base
}

// apiServerOf is apiServer, with the server.
func apiServerOf(t *testing.T, cfg Config) (openai.Client, string, *Server) {
	t.Helper()
	cfg.Embedded = lessonModels()
	s := mustNew(t, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.Handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	base := "http://" + ln.Addr().String()
	key := cfg.API.Key
	if key == "" {
		key = "unused"
	}
	return openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0)), base, s
}

var calculator = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "calculator",
	Description: openai.String("Adds or subtracts two whole numbers."),
	Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"expression": map[string]any{"type": "string"}},
		"required": []string{"expression"}},
})

// The official Go client against the server: chat, logprobs, stop,
// streaming, a tool call answered by the client, completions, models.
func TestOpenAIGoClient(t *testing.T) {
	client, _ := apiServer(t, Config{})
	ctx := context.Background()
	// chat, greedy, with logprobs
	res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:       "lesson.gguf",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the capital of France?")},
		Temperature: openai.Float(0), MaxTokens: openai.Int(20), Logprobs: openai.Bool(true), TopLogprobs: openai.Int(3),
	})
	if err != nil {
		t.Fatal(err)
	}
	ch := res.Choices[0]
	if ch.Message.Content != "The capital of France is Paris." || ch.FinishReason != "stop" {
		t.Errorf("chat: %q (%s)", ch.Message.Content, ch.FinishReason)
	}
	var text strings.Builder
	for _, lp := range ch.Logprobs.Content {
		text.WriteString(lp.Token)
		if len(lp.TopLogprobs) != 3 || lp.TopLogprobs[0].Logprob < lp.Logprob-1e-9 || lp.Logprob > 0 {
			t.Errorf("token %q: logprob %g, top %+v", lp.Token, lp.Logprob, lp.TopLogprobs)
		}
	}
	if text.String() != ch.Message.Content {
		t.Errorf("logprob tokens spell %q", text.String())
	}
	if u := res.Usage; u.PromptTokens < 5 || u.CompletionTokens != int64(len(ch.Logprobs.Content)+1) || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage %+v for %d tokens and the end of the turn", u, len(ch.Logprobs.Content))
	}
	// stop across token boundaries, and n
	res, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:       "lesson.gguf",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the capital of France?")},
		Temperature: openai.Float(0), Stop: openai.ChatCompletionNewParamsStopUnion{OfString: openai.String("ranc")}, N: openai.Int(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Choices {
		if c.Message.Content != "The capital of F" || c.FinishReason != "stop" {
			t.Errorf("stop %q: choice %d %q (%s)", "ranc", c.Index, c.Message.Content, c.FinishReason)
		}
	}
	// streaming, accumulated by the client
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         "lesson.gguf",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the capital of Spain?")},
		Temperature:   openai.Float(0),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; !strings.Contains(got, "Madrid") || chunks < 4 || acc.Usage.CompletionTokens == 0 {
		t.Errorf("stream: %q in %d chunks, usage %+v", got, chunks, acc.Usage)
	}
	// a tool call, executed by the client, then the answer
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is 347 + 85?")}
	params := openai.ChatCompletionNewParams{Model: "lesson.gguf", Messages: msgs, Temperature: openai.Float(0), Tools: []openai.ChatCompletionToolUnionParam{calculator}}
	res, err = client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	call := res.Choices[0].Message.ToolCalls
	if res.Choices[0].FinishReason != "tool_calls" || len(call) != 1 || call[0].Function.Name != "calculator" || call[0].Function.Arguments != `{"expression":"347+85"}` {
		t.Fatalf("tool call: %+v (%s)", call, res.Choices[0].FinishReason)
	}
	value, err := chat.Calc("347+85")
	if err != nil {
		t.Fatal(err)
	}
	params.Messages = append(msgs,
		openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{call[0].ToParam()}}},
		openai.ToolMessage(value, call[0].ID))
	res, err = client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Choices[0].Message.Content; !strings.Contains(got, "432") || res.Choices[0].FinishReason != "stop" {
		t.Errorf("after the tool's result: %q (%s)", got, res.Choices[0].FinishReason)
	}
	// completions
	cres, err := client.Completions.New(ctx, openai.CompletionNewParams{Model: "lesson.gguf", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("The capital of France is")},
		Temperature: openai.Float(0), MaxTokens: openai.Int(3), Logprobs: openai.Int(2)})
	if err != nil {
		t.Fatal(err)
	}
	if c := cres.Choices[0]; !strings.HasPrefix(c.Text, " Paris") || c.FinishReason != "length" || len(c.Logprobs.Tokens) != 3 {
		t.Errorf("completion: %q (%s), logprobs %+v", c.Text, c.FinishReason, c.Logprobs)
	}
	// models
	page, err := client.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range page.Data {
		found = found || m.ID == "lesson.gguf"
	}
	if !found {
		t.Errorf("models: %+v", page.Data)
	}
}

// Errors reach the client as OpenAI's error objects with their status.
func TestOpenAIErrors(t *testing.T) {
	client, base := apiServer(t, Config{API: APIConfig{Key: "sk-test"}})
	ctx := context.Background()
	user := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}
	var apiErr *openai.Error
	_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "nope.gguf", Messages: user})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" {
		t.Errorf("unknown model: %v", err)
	}
	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "lesson.gguf", Messages: user, MaxTokens: openai.Int(100000)})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "max_tokens" {
		t.Errorf("max_tokens over the cap: %v", err)
	}
	bad := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "calculator", Parameters: shared.FunctionParameters{"type": "objekt"}})
	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "lesson.gguf", Messages: user, Tools: []openai.ChatCompletionToolUnionParam{bad}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "JSON Schema") {
		t.Errorf("a tool schema that is not JSON Schema: %v", err)
	}
	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "lesson.gguf", Messages: user, Temperature: openai.Float(math.Inf(1))})
	if err == nil {
		t.Error("temperature +Inf: no error")
	}
	wrong := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey("sk-wrong"), option.WithMaxRetries(0))
	_, err = wrong.Models.List(ctx)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != "invalid_api_key" {
		t.Errorf("a wrong key: %v", err)
	}
}

// Over the concurrent limit a request gets 429; a body over the limit 413;
// malformed JSON 400 — each as OpenAI's error object.
func TestOpenAILimits(t *testing.T) {
	s := mustNew(t, Config{Embedded: lessonModels(), API: APIConfig{MaxConcurrent: 1, MaxBody: 1024}})
	h := s.Handler()
	post := func(body string) (int, string) {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	if code, body := post(`{"messages": [`); code != 400 || !strings.Contains(body, `"type":"invalid_request_error"`) {
		t.Errorf("malformed JSON: %d %s", code, body)
	}
	if code, body := post(`{"messages": [{"role": "user", "content": "` + strings.Repeat("x", 2000) + `"}]}`); code != 413 || !strings.Contains(body, `"error"`) {
		t.Errorf("a body over the limit: %d %s", code, body)
	}
	for range cap(s.apiSlots) { // every place taken: generating or queued
		s.apiSlots <- struct{}{}
	}
	code, body := post(`{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}`)
	for range cap(s.apiSlots) {
		<-s.apiSlots
	}
	if code != 429 || !strings.Contains(body, `"code":"rate_limit_exceeded"`) {
		t.Errorf("over the concurrent limit: %d %s", code, body)
	}
	if code, _ := post(`{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}`); code != 200 {
		t.Errorf("after the slot freed: %d", code)
	}
}

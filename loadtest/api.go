package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// APILoad is a load on any OpenAI-compatible server (Stepthrough's,
// llama.cpp's llama-server, vLLM): users that each send one streaming
// /v1/completions request, all at once or arriving at random.
type APILoad struct {
	URL         string  // the API's base, such as http://127.0.0.1:8080/v1
	Model       string  // the model field sent
	Key         string  // sent as a bearer token when set
	Users       int     // 1 to 1024
	Rate        float64 // arrivals per second, a Poisson process; 0: all at once
	PromptWords int     // words of story text per prompt (the server counts the tokens)
	MaxTokens   int     // generated per request: ignore_eos makes every reply this long
	Temperature float64
	Seed        uint64
}

// Check reports a load that cannot run.
func (ld APILoad) Check() error {
	switch {
	case !strings.HasPrefix(ld.URL, "http://") && !strings.HasPrefix(ld.URL, "https://"):
		return fmt.Errorf("url %q: want http://HOST[:PORT]/v1", ld.URL)
	case ld.Users < 1 || ld.Users > 1024:
		return fmt.Errorf("users: %d, want 1 to 1024", ld.Users)
	case ld.Rate < 0 || ld.Rate > 10000:
		return fmt.Errorf("rate: %g a second, want 0 to 10000", ld.Rate)
	case ld.PromptWords < 1 || ld.PromptWords > 4096:
		return fmt.Errorf("prompt words: %d, want 1 to 4096", ld.PromptWords)
	case ld.MaxTokens < 1 || ld.MaxTokens > 4096:
		return fmt.Errorf("max tokens: %d, want 1 to 4096", ld.MaxTokens)
	case ld.Temperature < 0 || ld.Temperature > 2:
		return fmt.Errorf("temperature: %g, want 0 to 2", ld.Temperature)
	}
	return nil
}

// APIResult is one load's measurement, taken on the client: what a user
// of the server sees.
type APIResult struct {
	URL   string `json:"url"`
	Users int    `json:"users"`
	// TTFT is from sending a request to its first text; TPOT the mean
	// time per token after it; E2E the whole request.
	TTFT, TPOT, E2E Percentiles
	PromptTokens    int           `json:"prompt_tokens"`    // the server's count, summed
	Generated       int           `json:"generated_tokens"` // the server's count (or streamed chunks), summed
	Wall            time.Duration `json:"wall_ns"`          // first request sent to last reply ended
	TokensPerSecond float64       `json:"tokens_per_second"`
	Errors          int           `json:"errors"`
	FirstError      string        `json:"first_error,omitempty"`
}

// Percentiles of a measured time.
type Percentiles struct{ P50, P95, P99 time.Duration }

func percentiles(d []time.Duration) Percentiles {
	if len(d) == 0 {
		return Percentiles{}
	}
	slices.Sort(d)
	at := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	return Percentiles{at(0.50), at(0.95), at(0.99)}
}

// stories are the texts prompts are cut from.
var stories = strings.Fields("Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. One day, a big dog went to the park. " +
	"He saw a red ball under a tree. Tom and Sue were best friends. They liked to build tall towers with blocks. There was a small bird who could not fly.")

// prompt is user i's prompt: its own first words, so no two users share a
// prefix a server could cache, then story text to the length asked.
func (ld APILoad) prompt(i int) string {
	words := []string{fmt.Sprintf("Story %d.", i+1)}
	for j := i; len(words) < ld.PromptWords; j++ {
		words = append(words, stories[j%len(stories)])
	}
	return strings.Join(words, " ")
}

// one is one user's measured request.
type one struct {
	ttft, e2e, tpot time.Duration
	prompt, gen     int
	err             error
}

// RunAPI runs the load and measures it on the client.
func RunAPI(ctx context.Context, ld APILoad) (APIResult, error) {
	if err := ld.Check(); err != nil {
		return APIResult{}, err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: ld.Users, MaxConnsPerHost: 0}}
	results := make([]one, ld.Users)
	arrivals := make([]time.Duration, ld.Users)
	if ld.Rate > 0 {
		r := rand.New(rand.NewPCG(ld.Seed, 1))
		var t float64
		for i := range arrivals {
			t += r.ExpFloat64() / ld.Rate
			arrivals[i] = time.Duration(t * float64(time.Second))
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range ld.Users {
		wg.Go(func() {
			if d := arrivals[i] - time.Since(start); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					results[i].err = ctx.Err()
					return
				}
			}
			results[i] = ld.request(ctx, client, i)
		})
	}
	wg.Wait()
	res := APIResult{URL: ld.URL, Users: ld.Users, Wall: time.Since(start)}
	var ttft, tpot, e2e []time.Duration
	for _, r := range results {
		if r.err != nil {
			if res.Errors++; res.FirstError == "" {
				res.FirstError = r.err.Error()
			}
			continue
		}
		ttft, e2e = append(ttft, r.ttft), append(e2e, r.e2e)
		if r.gen > 1 {
			tpot = append(tpot, r.tpot)
		}
		res.PromptTokens += r.prompt
		res.Generated += r.gen
	}
	res.TTFT, res.TPOT, res.E2E = percentiles(ttft), percentiles(tpot), percentiles(e2e)
	res.TokensPerSecond = float64(res.Generated) / res.Wall.Seconds()
	if res.Errors == ld.Users {
		return res, fmt.Errorf("every request failed: %s", res.FirstError)
	}
	return res, nil
}

// chunk is what RunAPI reads of a streamed completion chunk.
type chunk struct {
	Choices []struct {
		Text string `json:"text"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// request sends user i's request and reads its stream.
func (ld APILoad) request(ctx context.Context, client *http.Client, i int) one {
	body, _ := json.Marshal(map[string]any{"model": ld.Model, "prompt": ld.prompt(i), "max_tokens": ld.MaxTokens, "temperature": ld.Temperature,
		"seed": ld.Seed + uint64(i), "stream": true, "stream_options": map[string]bool{"include_usage": true}, "ignore_eos": true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(ld.URL, "/")+"/completions", bytes.NewReader(body))
	if err != nil {
		return one{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if ld.Key != "" {
		req.Header.Set("Authorization", "Bearer "+ld.Key)
	}
	sent := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return one{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return one{err: fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))}
	}
	var r one
	var first, last time.Time
	chunks := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return one{err: fmt.Errorf("a chunk is not JSON: %w", err)}
		}
		if c.Error != nil {
			return one{err: fmt.Errorf("the stream ended with an error: %s", c.Error.Message)}
		}
		if c.Usage != nil {
			r.prompt, r.gen = c.Usage.PromptTokens, c.Usage.CompletionTokens
		}
		if len(c.Choices) > 0 && c.Choices[0].Text != "" {
			now := time.Now()
			if first.IsZero() {
				first = now
			}
			last = now
			chunks++
		}
	}
	if err := sc.Err(); err != nil {
		return one{err: err}
	}
	if first.IsZero() {
		return one{err: fmt.Errorf("the reply had no text")}
	}
	if r.gen == 0 { // no usage chunk: one token a chunk
		r.gen = chunks
	}
	r.ttft, r.e2e = first.Sub(sent), last.Sub(sent)
	if r.gen > 1 {
		r.tpot = last.Sub(first) / time.Duration(r.gen-1)
	}
	return r
}

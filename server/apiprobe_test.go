package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"stepthrough/api"
	"stepthrough/engine/sample"
	"stepthrough/engine/trace"
	"stepthrough/models/modelstest"
	"stepthrough/session"
)

// probeChoice is a choice's extension as the response carries it.
type probeChoice struct {
	Stepthrough *api.Internals `json:"stepthrough"`
}

// probeBody is a chat request asking for every internal the extension
// has, with interventions when ablate is set.
func probeBody(stream bool, ablate string) map[string]any {
	st := map[string]any{"logit_lens": map[string]any{"top_k": 3}, "attention": map[string]any{"layers": []int{0, 1}, "heads": []int{1, 0}},
		"residual_norms": true, "trace_url": true}
	if ablate != "" {
		st["ablate"] = ablate
	}
	return map[string]any{"model": "lesson.gguf", "messages": []map[string]string{{"role": "user", "content": "Tell me a story."}},
		"temperature": 0.9, "seed": 42, "max_tokens": 6, "stream": stream, "stepthrough": st}
}

// The extension's internals are the Explorer's, read from its trace of
// the same prompt, settings and seed (the request page's replay): each
// generated token's logit lens (top tokens, p, final rank), the asked
// heads' attention rows and the residual norms; the trace URLs open the
// request's page at each token; the interventions go to the replay too.
func TestStepthroughMatchesExplorer(t *testing.T) {
	for _, ablate := range []string{"", "L1H1;L2mlp"} {
		t.Run("ablate="+ablate, func(t *testing.T) {
			client, base, s := apiServerOf(t, Config{})
			ctx := context.Background()
			var raw []byte
			res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{}, option.WithRequestBody("application/json", mustJSON(t, probeBody(false, ablate))), option.WithResponseBodyInto(&raw))
			_ = res
			if err != nil {
				t.Fatal(err)
			}
			var cc struct {
				ID      string        `json:"id"`
				Choices []probeChoice `json:"choices"`
				Usage   api.Usage     `json:"usage"`
			}
			if err := json.Unmarshal(raw, &cc); err != nil {
				t.Fatal(err)
			}
			toks := cc.Choices[0].Stepthrough.Tokens
			if len(toks) != cc.Usage.CompletionTokens {
				t.Fatalf("%d tokens' internals, %d tokens generated", len(toks), cc.Usage.CompletionTokens)
			}
			w := s.watched.get(cc.ID)
			run, err := s.replay(w)
			if err != nil {
				t.Fatal(err)
			}
			if got := run.Ablate.String(); got != ablate {
				t.Errorf("the replay runs with ablate %q, the request %q", got, ablate)
			}
			se := session.New("w", "", modelstest.Lesson(t))
			defer se.Close()
			if err := se.Open(ctx, run); err != nil {
				t.Fatal(err)
			}
			if err := se.Act(ctx, "end", nil); err != nil {
				t.Fatal(err)
			}
			steps := se.Snapshot().Cursor.Steps
			if len(steps) != len(toks) {
				t.Fatalf("the Explorer ran %d steps, the API %d tokens", len(steps), len(toks))
			}
			for j, tk := range toks {
				if want := base + "/requests/" + cc.ID + "#token-" + strconv.Itoa(j); tk.TraceURL != want || tk.Index != j || tk.ID != w.Generated[j] {
					t.Errorf("token %d: %+v", j, tk)
				}
				if d := cmp.Diff(explorerInternals(steps[j], tk.ID, tk.Text), tk, approx, cmpopts.IgnoreFields(api.LensToken{}, "Text"), cmpopts.IgnoreFields(api.TokenInternals{}, "Index", "TraceURL")); d != "" {
					t.Errorf("token %d: the Explorer's internals (-) and the API's (+):\n%s", j, d)
				}
			}
			code, page := getPage(t, tk0(toks).TraceURL)
			if code != http.StatusOK || !strings.Contains(page, `id="token-0"`) || !strings.Contains(page, `data-testid="probed-note"`) {
				t.Errorf("trace_url %s: %d, no token-0 anchor or no note that it ran outside the batch", tk0(toks).TraceURL, code)
			}
		})
	}
}

func tk0(t []api.TokenInternals) api.TokenInternals { return t[0] }

// approx compares float32s to 1e-5 relative: the Explorer's prefill lens
// reads its last 8 positions in one product, the API's its last one, and
// the two summation orders differ by a few float32 units (within 1e-6 at
// AVX-512; 2.2e-6 on an AVX2-only Zen 3, where eight vectors take the
// GEMM and one the eight-row kernel).
var approx = cmp.Comparer(func(a, b float32) bool { return math.Abs(float64(a-b)) <= 1e-5*max(1, math.Abs(float64(a))) })

// explorerInternals is what the extension should return for a token,
// read from the Explorer's trace step that generated it.
func explorerInternals(st *trace.Step, id int32, text string) api.TokenInternals {
	pos := st.Pos0 + st.N - 1
	t := api.TokenInternals{ID: id, Text: text, Position: pos}
	last := st.Layers[len(st.Layers)-1].Lens
	final := last.Top[len(last.Top)-1][0].ID
	for _, L := range st.Layers {
		top := L.Lens.Top[len(L.Lens.Top)-1]
		ll := api.LensLayer{Layer: L.Index, FinalRank: sample.Rank(L.Lens.Last, final)}
		for _, c := range top {
			ll.Top = append(ll.Top, api.LensToken{ID: c.ID, P: c.P})
		}
		t.LogitLens = append(t.LogitLens, ll)
		t.ResidualNorms = append(t.ResidualNorms, L.ResidMLP.Norms[len(L.ResidMLP.Norms)-1])
	}
	for _, l := range []int{0, 1} {
		w := st.Layers[l].Attention.Weights
		for _, h := range []int{1, 0} {
			t.Attention = append(t.Attention, api.HeadWeights{Layer: l, Head: h, Weights: w[len(w)-1][h]})
		}
	}
	return t
}

// postRaw posts body to the API path and returns the status and body.
func postRaw(t *testing.T, base, path string, body []byte) (int, []byte) {
	t.Helper()
	res, err := http.Post(base+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// Hostile extension objects are refused before anything runs, with a
// 400 naming the field at fault; internals over the size limit are
// refused naming the limit and the part that weighs most.
func TestStepthroughRefusals(t *testing.T) {
	_, base := apiServer(t, Config{})
	_, tight := apiServer(t, Config{WorkBudget: 1_000_000})
	_, small := apiServer(t, Config{MemoryBudget: 1 << 20})
	many := make([]int, api.MaxProbeList+1)
	for i := range many {
		many[i] = i
	}
	everything := map[string]any{"layers": []int{0, 1, 2, 3}, "heads": []int{0, 1, 2, 3, 4, 5}}
	for _, c := range []struct {
		name   string
		ext    any
		more   map[string]any
		base   string
		param  string
		code   string
		saying string
	}{
		{name: "not an object", ext: 5, param: "stepthrough", saying: "must be an object"},
		{name: "asks for nothing", ext: map[string]any{}, param: "stepthrough", saying: "asks for nothing"},
		{name: "an unknown field", ext: map[string]any{"hidden_states": true}, param: "stepthrough.hidden_states", saying: `no field "hidden_states"`},
		{name: "lens not an object", ext: map[string]any{"logit_lens": 3}, param: "stepthrough.logit_lens", saying: "top_k"},
		{name: "lens unknown field", ext: map[string]any{"logit_lens": map[string]any{"top_k": 3, "layers": 2}}, param: "stepthrough.logit_lens"},
		{name: "negative top_k", ext: map[string]any{"logit_lens": map[string]any{"top_k": -1}}, param: "stepthrough.logit_lens.top_k", saying: "from 1 to 20"},
		{name: "zero top_k", ext: map[string]any{"logit_lens": map[string]any{"top_k": 0}}, param: "stepthrough.logit_lens.top_k"},
		{name: "top_k over 20", ext: map[string]any{"logit_lens": map[string]any{"top_k": 21}}, param: "stepthrough.logit_lens.top_k"},
		{name: "top_k a string", ext: map[string]any{"logit_lens": map[string]any{"top_k": "3"}}, param: "stepthrough.logit_lens.top_k"},
		{name: "top_k a fraction", ext: map[string]any{"logit_lens": map[string]any{"top_k": 2.5}}, param: "stepthrough.logit_lens.top_k"},
		{name: "attention without heads", ext: map[string]any{"attention": map[string]any{"layers": []int{0}}}, param: "stepthrough.attention"},
		{name: "a layer past the model", ext: map[string]any{"attention": map[string]any{"layers": []int{0, 4}, "heads": []int{0}}}, param: "stepthrough.attention.layers[1]", saying: "the model has 4 layers (0 to 3)"},
		{name: "a head past the model", ext: map[string]any{"attention": map[string]any{"layers": []int{0}, "heads": []int{6}}}, param: "stepthrough.attention.heads[0]", saying: "the model has 6 heads (0 to 5)"},
		{name: "a negative layer", ext: map[string]any{"attention": map[string]any{"layers": []int{-1}, "heads": []int{0}}}, param: "stepthrough.attention.layers[0]"},
		{name: "no layers", ext: map[string]any{"attention": map[string]any{"layers": []int{}, "heads": []int{0}}}, param: "stepthrough.attention.layers", saying: "non-empty"},
		{name: "a huge list", ext: map[string]any{"attention": map[string]any{"layers": []int{0}, "heads": many}}, param: "stepthrough.attention.heads", saying: "the limit is 256"},
		{name: "a head twice", ext: map[string]any{"attention": map[string]any{"layers": []int{0}, "heads": []int{1, 1}}}, param: "stepthrough.attention.heads[1]", saying: "twice"},
		{name: "layers a string", ext: map[string]any{"attention": map[string]any{"layers": "0", "heads": []int{0}}}, param: "stepthrough.attention.layers"},
		{name: "norms not a bool", ext: map[string]any{"residual_norms": "yes"}, param: "stepthrough.residual_norms"},
		{name: "trace_url not a bool", ext: map[string]any{"trace_url": 1}, param: "stepthrough.trace_url"},
		{name: "ablate counted from 0", ext: map[string]any{"ablate": "L0H1"}, param: "stepthrough.ablate", saying: "from 1"},
		{name: "ablate past the model", ext: map[string]any{"ablate": "L9H1"}, param: "stepthrough.ablate"},
		{name: "ablate not a string", ext: map[string]any{"ablate": 5}, param: "stepthrough.ablate"},
		{name: "steer unreadable", ext: map[string]any{"steer": "happy"}, param: "stepthrough.steer"},
		{name: "mean_over too long", ext: map[string]any{"ablate": "L1H1", "mean_over": strings.Repeat("a", 1001)}, param: "stepthrough.mean_over", saying: "at most 1000 bytes"},
		{name: "mean_over past the context", ext: map[string]any{"ablate": "L1H1", "mean_over": strings.Repeat("é", 500)}, param: "stepthrough", saying: "1001 tokens (at most 512 here)"},
		{name: "mean_over without ablate", ext: map[string]any{"mean_over": "a text"}, param: "stepthrough.mean_over", saying: "needs ablate"},
		{name: "too much attention", ext: map[string]any{"attention": everything}, more: map[string]any{"max_tokens": 400, "n": 2},
			param: "stepthrough.attention", code: "stepthrough_too_large", saying: "over the limit of 2000000 per response (attention: 4 layers × 6 heads"},
		{name: "a lens over the work budget", ext: map[string]any{"logit_lens": map[string]any{"top_k": 1}}, more: map[string]any{"max_tokens": 10}, base: tight,
			param: "stepthrough.logit_lens", code: "stepthrough_too_large", saying: "--work-budget"},
		{name: "over the memory budget", ext: map[string]any{"residual_norms": true}, more: map[string]any{"max_tokens": 400}, base: small,
			param: "stepthrough", code: "stepthrough_too_large", saying: "--memory-budget"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := map[string]any{"model": "lesson.gguf", "prompt": "Once upon a time", "max_tokens": 4, "stepthrough": c.ext}
			for k, v := range c.more {
				body[k] = v
			}
			b := base
			if c.base != "" {
				b = c.base
			}
			code, out := postRaw(t, b, "/v1/completions", mustJSON(t, body))
			var e struct{ Error api.Error }
			if err := json.Unmarshal(out, &e); err != nil || code != http.StatusBadRequest {
				t.Fatalf("%d %s", code, out)
			}
			param, errCode := "", ""
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if e.Error.Code != nil {
				errCode = *e.Error.Code
			}
			if param != c.param || errCode != c.code || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, c.saying) {
				t.Errorf("param %q code %q type %q: %s", param, errCode, e.Error.Type, e.Error.Message)
			}
		})
	}
}

// Without the extension (or with "stepthrough": null) a response has the
// fields it always had, streamed or not, on both endpoints.
func TestStepthroughAbsentAddsNothing(t *testing.T) {
	_, base := apiServer(t, Config{})
	chatKeys := []string{"finish_reason", "index", "logprobs", "message"}
	textKeys := []string{"finish_reason", "index", "logprobs", "text"}
	for _, c := range []struct {
		name, path string
		body       map[string]any
		keys       []string
	}{
		{"chat", "/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": "Hi"}}}, chatKeys},
		{"completions", "/v1/completions", map[string]any{"prompt": "Once upon a time"}, textKeys},
	} {
		for _, ext := range []string{"absent", "null"} {
			for _, stream := range []bool{false, true} {
				t.Run(c.name+"/"+ext+"/stream="+strconv.FormatBool(stream), func(t *testing.T) {
					body := map[string]any{"model": "lesson.gguf", "max_tokens": 5, "temperature": 0, "stream": stream}
					for k, v := range c.body {
						body[k] = v
					}
					if ext == "null" {
						body["stepthrough"] = nil
					}
					code, out := postRaw(t, base, c.path, mustJSON(t, body))
					if code != http.StatusOK || bytes.Contains(out, []byte(`"stepthrough":`)) {
						t.Fatalf("%d %s", code, out)
					}
					if stream {
						return
					}
					var r struct{ Choices []map[string]json.RawMessage }
					if err := json.Unmarshal(out, &r); err != nil {
						t.Fatal(err)
					}
					var keys []string
					for k := range r.Choices[0] {
						keys = append(keys, k)
					}
					slices.Sort(keys)
					if d := cmp.Diff(c.keys, keys); d != "" {
						t.Errorf("a choice's fields (-before +now):\n%s", d)
					}
				})
			}
		}
	}
}

// A streamed request carries each token's internals in the chunks, in
// order, the same as the whole response's for the same seed.
func TestStepthroughStreamed(t *testing.T) {
	_, base := apiServer(t, Config{})
	code, whole := postRaw(t, base, "/v1/chat/completions", mustJSON(t, probeBody(false, "L2H3")))
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, whole)
	}
	var cc struct{ Choices []probeChoice }
	if err := json.Unmarshal(whole, &cc); err != nil {
		t.Fatal(err)
	}
	code, events := postRaw(t, base, "/v1/chat/completions", mustJSON(t, probeBody(true, "L2H3")))
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, events)
	}
	var streamed []api.TokenInternals
	chunks := 0
	for line := range strings.Lines(string(events)) {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct{ Choices []probeChoice }
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Choices {
			if c.Stepthrough != nil {
				chunks++
				streamed = append(streamed, c.Stepthrough.Tokens...)
			}
		}
	}
	want := cc.Choices[0].Stepthrough.Tokens
	if chunks < len(want)-1 {
		t.Errorf("%d tokens' internals came in %d chunks", len(want), chunks)
	}
	if d := cmp.Diff(want, streamed, cmpopts.IgnoreFields(api.TokenInternals{}, "TraceURL")); d != "" {
		t.Errorf("the streamed internals (+) differ from the whole response's (-):\n%s", d)
	}
}

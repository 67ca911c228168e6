package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"stepthrough/api"
	"stepthrough/engine/registry/registrytest"
	"stepthrough/engine/sample"
	"stepthrough/engine/trace"
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
			if run.Ablate != ablate {
				t.Errorf("the replay runs with ablate %q, the request %q", run.Ablate, ablate)
			}
			se := session.New("w", "", registrytest.Lesson(t))
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
			if code != http.StatusOK || !strings.Contains(page, `id="token-0"`) {
				t.Errorf("trace_url %s: %d, no token-0 anchor", tk0(toks).TraceURL, code)
			}
		})
	}
}

func tk0(t []api.TokenInternals) api.TokenInternals { return t[0] }

// approx compares float32s to a millionth (the Explorer's prefill lens
// reads its last 8 positions in one product, the API's its last one).
var approx = cmp.Comparer(func(a, b float32) bool { return math.Abs(float64(a-b)) <= 1e-6*max(1, math.Abs(float64(a))) })

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

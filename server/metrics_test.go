package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// /metrics parses with the Prometheus client library's own parser and
// counts what the API's batch did: prompt and generated tokens, cached
// prompt tokens, decode calls, and a TTFT observation per request.
func TestMetricsParse(t *testing.T) {
	client, base := apiServer(t, Config{})
	ctx := context.Background()
	system := "You are a helpful assistant for a class of students. Answer in one short sentence, and be kind, clear and exact. Never make up facts."
	var prompt, completion, cached int64
	for range 2 {
		res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "lesson.gguf",
			Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage("What is 2 + 3?")},
			Temperature: openai.Float(0), MaxTokens: openai.Int(8)})
		if err != nil {
			t.Fatal(err)
		}
		prompt += res.Usage.PromptTokens
		completion += res.Usage.CompletionTokens
		cached += res.Usage.PromptTokensDetails.CachedTokens
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the page does not parse: %v\n%s", err, body)
	}
	value := func(name string) float64 {
		f, ok := fams[name]
		if !ok || len(f.Metric) == 0 {
			t.Errorf("%s missing", name)
			return -1
		}
		m := f.Metric[0]
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
		return -1
	}
	for _, tc := range []struct {
		name string
		want float64
	}{
		{"stepthrough_prompt_tokens_total", float64(prompt)},
		{"stepthrough_prompt_tokens_cached_total", float64(cached)},
		{"stepthrough_generation_tokens_total", float64(completion)},
		{"stepthrough_requests_total", 2},
		{"stepthrough_requests_running", 0},
		{"stepthrough_time_to_first_token_seconds", 2},
		{"stepthrough_spec_draft_tokens_total", value("stepthrough_spec_draft_tokens_total")},
	} {
		if got := value(tc.name); got != tc.want {
			t.Errorf("%s = %g, want %g", tc.name, got, tc.want)
		}
	}
	if cached == 0 {
		t.Error("the second request's system prompt came from no cache")
	}
	if calls := value("stepthrough_decode_calls_total"); calls < float64(completion)/2 {
		t.Errorf("%g decode calls for %d tokens", calls, completion)
	}
	for _, name := range []string{"stepthrough_prompt_seconds_total", "stepthrough_generation_seconds_total", "stepthrough_kv_blocks_free",
		"stepthrough_kv_blocks_cached", "stepthrough_time_per_output_token_seconds", "stepthrough_decode_sequences_total"} {
		if value(name) <= 0 {
			t.Errorf("%s is not positive", name)
		}
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200} {
		r, err := http.Get(base + path)
		if err != nil || r.StatusCode != want {
			t.Errorf("%s: %v %v", path, r.StatusCode, err)
		}
	}
}

// The classroom's figures on /metrics: rooms, connections, broadcasts and
// their time, store errors.
func TestMetricsRooms(t *testing.T) {
	_, ts := classServer(t, t.TempDir())
	code, key := startRoom(t, ts.URL, url.Values{"lesson": {"tokens"}})
	teach := dialRoom(t, ts.URL, code, "key="+key)
	teach.wait(`id="teach-extras"`)
	sa := dialRoom(t, ts.URL, code, studentID(t, ts.URL, code))
	sa.wait(`data-state="following"`)
	teach.send(map[string]string{"action": "lesson-step", "to": "1"})
	sa.wait(`data-lesson-step="1"`)
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) float64 {
		f, ok := fams[name]
		if !ok {
			t.Fatalf("%s missing", name)
		}
		m := f.Metric[0]
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Counter != nil:
			return m.Counter.GetValue()
		}
		return float64(m.Histogram.GetSampleCount())
	}
	if get("stepthrough_rooms") != 1 || get("stepthrough_room_connections") != 2 || get("stepthrough_store_errors_total") != 0 {
		t.Errorf("rooms %g, connections %g, store errors %g; want 1, 2, 0", get("stepthrough_rooms"), get("stepthrough_room_connections"), get("stepthrough_store_errors_total"))
	}
	if b, h := get("stepthrough_room_broadcasts_total"), get("stepthrough_room_broadcast_seconds"); b < 1 || h != b {
		t.Errorf("%g broadcasts, %g timed", b, h)
	}
}

package server

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/openai/openai-go/v3"

	"stepthrough/models/modelstest"
	"stepthrough/present"
	"stepthrough/session"
	"stepthrough/spec"
)

func getPage(t *testing.T, u string) (int, string) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// An API request is kept for watching: its page shows the JSON in, the
// rendered prompt and its token count, each generated token with its
// logprob, and the JSON out; its Explorer link replays exactly those
// tokens, and the softmax stage there shows p = e^logprob at T = 1.
func TestWatchThisRequest(t *testing.T) {
	client, base := apiServer(t, Config{})
	ctx := context.Background()
	res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "lesson.gguf",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Tell me a story.")}, Temperature: openai.Float(0.9), Seed: openai.Int(42), MaxTokens: openai.Int(12)})
	if err != nil {
		t.Fatal(err)
	}
	code, list := getPage(t, base+"/requests")
	if code != 200 || !strings.Contains(list, "/requests/"+res.ID) {
		t.Fatalf("the list (%d) does not link %s", code, res.ID)
	}
	code, page := getPage(t, base+"/requests/"+res.ID)
	if code != 200 {
		t.Fatalf("request page: %d", code)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Find(`[data-testid="request-json"]`).Text(), `"Tell me a story."`) ||
		doc.Find(`[data-testid="rendered-prompt"]`).Text() != "<|user|>Tell me a story.<|end|><|assistant|>" ||
		doc.Find(`[data-testid="prompt-tokens"]`).Text() != strconv.FormatInt(res.Usage.PromptTokens, 10) ||
		!strings.Contains(doc.Find(`[data-testid="response"]`).Text(), res.ID) {
		t.Errorf("the page does not show the request, prompt, token count and response")
	}
	var ids []int32
	doc.Find(`[data-testid="request-token"]`).Each(func(_ int, s *goquery.Selection) {
		n, _ := strconv.Atoi(s.AttrOr("data-token-id", ""))
		ids = append(ids, int32(n))
	})
	if int64(len(ids)) != res.Usage.CompletionTokens {
		t.Errorf("%d tokens shown, usage says %d", len(ids), res.Usage.CompletionTokens)
	}
	// the Explorer's replay computes the same tokens
	link, ok := doc.Find(`[data-testid="open-explorer"]`).Attr("href")
	if !ok {
		t.Fatal("no Explorer link")
	}
	u, _ := url.Parse(link)
	run, err := spec.FromQuery(u.Query(), spec.Default("lesson.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	reg := modelstest.Lesson(t)
	se := session.New("w", "", reg)
	defer se.Close()
	if err := se.Open(ctx, run); err != nil {
		t.Fatal(err)
	}
	if err := se.Act(ctx, "end", nil); err != nil {
		t.Fatal(err)
	}
	var replay []int32
	for _, g := range present.Explorer(se).Generated {
		replay = append(replay, g.ID)
	}
	if !slices.Equal(replay, ids) {
		t.Errorf("the Explorer replays %v, the request generated %v", replay, ids)
	}
	// the request did not ask for logprobs: the page computes them, and says so
	if !strings.Contains(doc.Find(`[data-testid="logprobs-note"]`).Text(), "computed these when this page was opened") {
		t.Errorf("no note on where the log-probabilities came from")
	}
	// a token's p on the page is the softmax panel's at T = 1
	row := doc.Find(`[data-testid="request-token"]`).Eq(3)
	soft, _ := row.Find("a").Attr("href")
	pText := row.Find(`[data-testid="token-p"]`).Text()
	u, _ = url.Parse(soft)
	run, err = spec.FromQuery(u.Query(), spec.Default("lesson.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := se.Open(ctx, run); err != nil {
		t.Fatal(err)
	}
	_, html := getPage(t, base+soft)
	sd, _ := goquery.NewDocumentFromReader(strings.NewReader(html))
	pv, _ := sd.Find(`[data-testid="prob"][data-token-id="` + row.AttrOr("data-token-id", "") + `"]`).Attr("data-p")
	p, _ := strconv.ParseFloat(pv, 64)
	want, _ := strconv.ParseFloat(strings.TrimSuffix(pText, "%"), 64)
	if sd.Find(`[data-stage="softmax"]`).Length() != 1 || p == 0 || !regexp.MustCompile(`^\d+\.\d\d%$`).MatchString(pText) || abs(100*p-want) > 0.006 {
		t.Errorf("softmax panel p %s (%g), the request page %s", pv, p, pText)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// A streamed request is kept by the time its client reads [DONE]: the
// page the reply points to is there at once, every time.
func TestStreamedRequestKeptWhenItEnds(t *testing.T) {
	client, base, s := apiServerOf(t, Config{})
	for i := range 50 {
		st := client.Completions.NewStreaming(context.Background(), openai.CompletionNewParams{
			Model: "lesson.gguf", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
			MaxTokens: openai.Int(1), Temperature: openai.Float(0),
		})
		var id string
		for st.Next() {
			id = st.Current().ID
		}
		if err := st.Err(); err != nil || id == "" {
			t.Fatalf("stream %d: %v (id %q)", i, err, id)
		}
		if s.watched.get(id) == nil {
			t.Fatalf("stream %d: %s not kept when the client read [DONE]", i, id)
		}
		if code, _ := getPage(t, base+"/requests/"+id); code != http.StatusOK {
			t.Fatalf("stream %d: /requests/%s right after [DONE]: %d", i, id, code)
		}
	}
}

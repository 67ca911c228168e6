package server

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"stepthrough/views"
)

// FuzzExplorerMessage drives an Explorer session with arbitrary WebSocket
// messages: every one is answered with a fragment or a one-line note,
// never a panic (each message also checks the session still answers: a
// refused one gets a note, any other the whole fragment).
func FuzzExplorerMessage(f *testing.F) {
	s := mustNew(f, Config{Embedded: lessonModels()})
	se, err := s.sessions.New("fuzz")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		`{"action":"run","prompt":"Once upon a time","temperature":"0","max_tokens":"4"}`,
		`{"action":"step"}`, `{"action":"back"}`, `{"action":"next-token"}`, `{"action":"end"}`, `{"action":"reset"}`,
		`{"action":"whatif-temperature","view_temperature":"0.5"}`, `{"action":"view","layer":"1","head":"2","scores":"on"}`,
		`{"action":"run","prompt":"x","top_p":"2"}`, `{"action":"run","order":"top-k,top-k"}`, `{"action":"view","layer":"-9"}`,
		`{"action":"run","prompt":"` + strings.Repeat("é", 300) + `","max_tokens":"2"}`, `[]`, `{"action":7}`, `{`,
		`{"action":"goto","stage":"mlp","layer":"2"}`, `{"action":"goto","stage":"sampler","filter":"99"}`, `{"action":"whatif-top-p","view_top_p":"0.3"}`,
	} {
		f.Add([]byte(seed))
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, raw []byte) {
		drawn := ""
		reply, note := s.explorerMessage(ctx, "fuzz", se, raw, &drawn)
		switch {
		case note != "":
			if strings.Contains(note, "\n") || !utf8.ValidString(note) {
				t.Fatalf("note %q", note)
			}
		case !strings.Contains(string(reply), `id="explorer"`):
			t.Fatalf("reply without the Explorer fragment: %.200s", reply)
		}
	})
}

// FuzzServingForm: any /serving form is a load within the page's bounds
// (users, lengths, rate, one or two settings) or a one-line refusal
// naming the field; nothing panics.
func FuzzServingForm(f *testing.F) {
	s := mustNew(f, Config{Embedded: lessonModels()})
	for _, q := range []string{
		"model=lesson.gguf&users=8&rate=0&prompt=32&min=8&max=32&seqs=4&policy=continuous&cache=paged&chunked=on&temperature=0",
		"model=lesson.gguf&users=8&rate=2.5&prompt=32&min=8&max=32&seqs=4&policy=static&cache=contiguous&chunked=off&compare=continuous,paged,on&temperature=1&stop=.",
		"model=x&users=-1", "model=lesson.gguf&users=1e9&rate=NaN", "compare=a,b", "model=lesson.gguf@f16&users=1",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, query string) {
		v, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		g := func(k string) string { return truncate(v.Get(k), 100) }
		form := views.ServingForm{Model: g("model"), Users: g("users"), Rate: g("rate"), PromptTokens: g("prompt"), MinTokens: g("min"), MaxTokens: g("max"),
			MaxSeqs: g("seqs"), Policy: g("policy"), Cache: g("cache"), Chunked: g("chunked"), Compare: g("compare"), Temperature: g("temperature"), Stop: v.Get("stop"), IgnoreEOS: g("ignore_eos")}
		ld, settings, names, err := s.parseServing(form)
		if err != nil {
			if msg := err.Error(); msg == "" || strings.Contains(msg, "\n") || len(msg) > 400 {
				t.Fatalf("refusal %q", msg)
			}
			return
		}
		if ld.Users < 1 || ld.Users > 64 || ld.PromptTokens < 1 || ld.MaxTokens > 512 || ld.MinTokens > ld.MaxTokens ||
			ld.Rate < 0 || ld.Rate > 1000 || len(settings) < 1 || len(settings) > 2 || len(names) != len(settings) {
			t.Fatalf("accepted %+v %+v", ld, settings)
		}
	})
}

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"stepthrough/engine/serve"
	"stepthrough/lessons/library"
	"stepthrough/views"
)

// The agent page's retrieval task: BM25 over the lessons' small document
// set, the passages found written into the prompt, the question asked
// through the API — and then asked again, when the prefix cache holds the
// long prompt's blocks. Every phase's time and tokens are measured.

// retrievalHits is how many passages go into the prompt.
const retrievalHits = 2

func (s *Server) retrievalTask(ctx context.Context, scope, q, model string) views.RetrievalTask {
	t := views.RetrievalTask{Question: q}
	start := time.Now()
	lib, err := library.Builtin()
	if err != nil {
		t.Error = err.Error()
		return t
	}
	hits := lib.Search(q, retrievalHits)
	t.RetrieveMS = ms(time.Since(start))
	t.Documents = len(lib.Docs)
	var notes []string
	for _, h := range hits {
		t.Hits = append(t.Hits, views.RetrievedDoc{Title: h.Doc.Title, Score: fmt.Sprintf("%.3f", h.Score), Text: h.Doc.Text})
		notes = append(notes, h.Doc.Title+": "+h.Doc.Text)
	}
	if len(hits) == 0 {
		notes = append(notes, "(no document matched the question)")
	}
	system := "Answer the question from these notes.\n\n" + strings.Join(notes, "\n\n")
	body, _ := json.Marshal(map[string]any{"model": model, "temperature": 0, "max_tokens": agentMaxTokens,
		"messages": []any{map[string]any{"role": "system", "content": system}, map[string]any{"role": "user", "content": q}}})
	for i := range t.Asks {
		ask := &t.Asks[i]
		start := time.Now()
		r, e := s.chatInProcess(ctx, scope, body)
		if e != nil {
			t.Error = e.Message
			return t
		}
		ask.TotalMS = ms(time.Since(start))
		u := r.cc.Usage
		ask.PromptTokens, ask.Cached, ask.Completion = u.PromptTokens, u.PromptTokensDetails.CachedTokens, u.CompletionTokens
		ask.PrefillMS, ask.DecodeMS = phaseMS(r.times)
		ask.WatchURL = "/requests/" + r.cc.ID
		if m := r.cc.Choices[0].Message.Content; m != nil {
			ask.Answer = *m
		}
	}
	return t
}

// phaseMS splits a request's time in the batch: arrival to its first
// token (queueing and its prompt's prefill), then its other tokens.
func phaseMS(t serve.Times) (prefill, decode float64) {
	return ms(t.TTFT()), ms(t.Finished.Sub(t.FirstToken))
}

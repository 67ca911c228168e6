package server

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"stepthrough/engine/serve"
	"stepthrough/lessons/library"
	"stepthrough/present"
	"stepthrough/views"
)

// The agent page's retrieval task: BM25 over the lessons' small document
// set, the passages found written into the prompt, the question asked
// through the API — and then asked again, when the prefix cache holds the
// long prompt's blocks. Every phase's time and tokens are measured.

// retrievalHits is how many passages go into the prompt.
const retrievalHits = 2

func (s *Server) retrievalTask(ctx context.Context, scope, q, model string) views.RetrievalTask {
	start := time.Now()
	lib, err := library.Builtin()
	if err != nil {
		t := present.RetrievalTask(q, 0, 0, nil)
		t.Error = err.Error()
		return t
	}
	hits := lib.Search(q, retrievalHits)
	retrieveMS := ms(time.Since(start))
	found := make([]present.RetrievalHit, len(hits))
	var notes []string
	for i, h := range hits {
		found[i] = present.RetrievalHit{Title: h.Doc.Title, Text: h.Doc.Text, Score: h.Score}
		notes = append(notes, h.Doc.Title+": "+h.Doc.Text)
	}
	t := present.RetrievalTask(q, len(lib.Docs), retrieveMS, found)
	if len(hits) == 0 {
		notes = append(notes, "(no document matched the question)")
	}
	system := "Answer the question from these notes.\n\n" + strings.Join(notes, "\n\n")
	body, _ := json.Marshal(map[string]any{"model": model, "temperature": 0, "max_tokens": agentMaxTokens,
		"messages": []any{map[string]any{"role": "system", "content": system}, map[string]any{"role": "user", "content": q}}})
	var replies []present.AgentReply
	for range len(t.Asks) {
		start := time.Now()
		r, e := s.chatInProcess(ctx, scope, body)
		if e != nil {
			t.Error = e.Message
			break
		}
		replies = append(replies, replyOf(r, ms(time.Since(start))))
	}
	present.RetrievalAnswers(&t, replies)
	return t
}

// phaseMS splits a request's time in the batch: arrival to its first
// token (queueing and its prompt's prefill), then its other tokens.
func phaseMS(t serve.Times) (prefill, decode float64) {
	return ms(t.TTFT()), ms(t.Finished.Sub(t.FirstToken))
}

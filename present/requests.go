package present

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"stepthrough/engine/tokenizer"
	"stepthrough/views"
)

// The "Watch this request" pages: the last API requests, and one of them
// followed through the engine.

// Request is one watched API request: what it asked, what it got.
type Request struct {
	ID, Model        string
	Time             time.Time
	Chat, Streamed   bool
	Probed           bool   // it ran outside the batch, recording its internals
	Raw              string // the request body
	Prompt, Template string
	PromptTokens     int
	Cached           int    // prompt tokens read from the prefix cache
	Usage            [3]int // prompt, completion, total tokens
	Finish, Response string
	Seed             uint64
}

// RequestList is the list of the watched requests, newest as given.
func RequestList(rs []Request) views.RequestList {
	l := views.RequestList{}
	for _, w := range rs {
		summary := w.Prompt
		if len(summary) > 80 {
			summary = summary[:80] + "…"
		}
		l.Items = append(l.Items, views.RequestItem{ID: w.ID, URL: "/requests/" + w.ID, Endpoint: endpoint(w.Chat), Model: w.Model,
			Time: w.Time.Format("15:04:05"), Summary: summary, Tokens: w.Usage[2]})
	}
	return l
}

func endpoint(chat bool) string {
	if chat {
		return "POST /v1/chat/completions"
	}
	return "POST /v1/completions"
}

// RequestPage is one request's page without its tokens: the request and
// response (JSON indented; a stream's events as they came).
func RequestPage(w Request) views.RequestPage {
	p := views.RequestPage{ID: w.ID, Endpoint: endpoint(w.Chat), Model: w.Model, Time: w.Time.Format("2006-01-02 15:04:05"), Streamed: w.Streamed,
		Request: indent(w.Raw), Prompt: w.Prompt, Template: w.Template, PromptTokens: w.PromptTokens, Cached: w.Cached,
		Usage: w.Usage, Finish: w.Finish, Response: w.Response, Seed: strconv.FormatUint(w.Seed, 10), Probed: w.Probed}
	if !w.Streamed {
		p.Response = indent(w.Response)
	}
	return p
}

// RequestStep is the batch step a generated token came from, and the
// requests it shared that step with.
type RequestStep struct {
	Pass  int
	Mates []string
}

// RequestTokens fills p's tokens: each generated token with its batch
// step (steps, as far as they go), its log-probability (logprobs, as far
// as they go) and, when softmax is given, the Explorer at its softmax.
func RequestTokens(p *views.RequestPage, tk *tokenizer.Tokenizer, generated []int32, steps []RequestStep, logprobs []float64, softmax func(step int) string) {
	p.Logprobs = len(logprobs) > 0
	for i, id := range generated {
		t := views.RequestToken{Step: i, ID: id, Text: views.PieceLabel(tk.Display(id)), End: tk.IsEOG(id), Pass: -1}
		if i < len(steps) {
			t.Pass, t.Mates = steps[i].Pass, shortIDs(steps[i].Mates)
		}
		if i < len(logprobs) && !t.End {
			t.Logprob, t.P = logprobs[i], math.Exp(logprobs[i])
		}
		if softmax != nil {
			t.Softmax = softmax(i)
		}
		p.Tokens = append(p.Tokens, t)
	}
}

// indent pretty-prints JSON (anything else as it is).
func indent(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(strings.TrimSpace(s)), "", "  ") != nil {
		return s
	}
	return b.String()
}

// shortIDs shortens request ids to their first hex digits: enough to tell
// batch-mates apart, too few to open another client's request.
func shortIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		pre, hex, ok := strings.Cut(id, "-")
		if !ok || len(hex) <= 6 {
			out[i] = id
			continue
		}
		out[i] = pre + "-" + hex[:6] + "…"
	}
	return out
}

package present

import (
	"cmp"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"stepthrough/views"
)

// The agent page: one question through the API as a client's tool loop
// runs it, the same question answered with and without written-out
// reasoning, and a question answered from retrieved passages.

// The questions the page asks until the viewer writes others.
const (
	AgentDefaultQuestion     = "What is 347 + 85?"
	RetrievalDefaultQuestion = "Where does Lily keep her red ball?"
)

// AgentForm is the page before its runs: the tool loop's question q and
// the retrieval task's rq (empty: the defaults), asked of model.
func AgentForm(q, rq, model string) views.AgentPage {
	return views.AgentPage{Question: cmp.Or(q, AgentDefaultQuestion), Model: model, Retrieval: views.RetrievalTask{Question: cmp.Or(rq, RetrievalDefaultQuestion)}}
}

// AgentReply is one chat request's reply as the page reads it.
type AgentReply struct {
	ID                             string // the request's id: its watch page
	PromptTokens, CompletionTokens int
	Cached                         int // prompt tokens read from the prefix cache
	MS                             float64
	PrefillMS, DecodeMS            float64 // arrival to its first token; its other tokens
	Finish, Content, Reasoning     string
}

func (r AgentReply) watchURL() string { return "/requests/" + r.ID }

// ToolCall is a tool call the server ran.
type ToolCall struct{ Name, Arguments, Result string }

// AgentStep is one pass of the tool loop: its request body, the reply,
// the calls it asked for (run), and whether it is the model's second try
// after a call that did not parse.
type AgentStep struct {
	Request string
	Reply   AgentReply
	Calls   []ToolCall
	Retry   bool
}

// AgentLoop fills p's tool loop from its steps: each pass and the totals;
// when the loop ended (not cut short by an error), its answer: the last
// pass's words if it called no tool, else that maxPasses gave none.
func AgentLoop(p *views.AgentPage, steps []AgentStep, ended bool, maxPasses int) {
	for i, st := range steps {
		r := st.Reply
		pass := views.AgentPass{N: i + 1, WatchURL: r.watchURL(), PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens,
			Cached: r.Cached, MS: r.MS, Finish: r.Finish, Request: st.Request, Retry: st.Retry, Content: r.Content}
		for _, c := range st.Calls {
			pass.Calls = append(pass.Calls, views.AgentCall{Name: c.Name, Arguments: c.Arguments, Result: c.Result})
		}
		p.TotalPrompt += r.PromptTokens
		p.TotalCompletion += r.CompletionTokens
		p.TotalMS += r.MS
		p.Passes = append(p.Passes, pass)
	}
	if !ended {
		return
	}
	if n := len(steps); n > 0 && len(steps[n-1].Calls) == 0 {
		p.Answer = steps[n-1].Reply.Content
		return
	}
	p.Answer = fmt.Sprintf("(no answer after %d passes)", maxPasses)
}

var sumQuestion = regexp.MustCompile(`^What is (\d{1,9}) \+ (\d{1,9})\?$`)

// ReasoningRun is question q answered once (system: the system message,
// "" for none), measured, and for a sum whether the answer states it;
// failed is the request's error ("" when it ran).
func ReasoningRun(q, system string, r AgentReply, failed string) views.ReasoningRun {
	if failed != "" {
		return views.ReasoningRun{System: system, Error: failed}
	}
	v := views.ReasoningRun{System: system, MS: r.MS, Answer: r.Content, Reasoning: r.Reasoning, Tokens: r.CompletionTokens, WatchURL: r.watchURL(), Correct: "—"}
	if g := sumQuestion.FindStringSubmatch(q); g != nil {
		a, _ := strconv.Atoi(g[1])
		b, _ := strconv.Atoi(g[2])
		v.Correct = "no"
		if strings.Contains(v.Answer, fmt.Sprintf("= %d.", a+b)) {
			v.Correct = "yes"
		}
		v.Expected = strconv.Itoa(a + b)
	}
	return v
}

// RetrievalHit is a passage the search found, with its score.
type RetrievalHit struct {
	Title, Text string
	Score       float64
}

// RetrievalTask is the retrieval task before its requests: the question,
// how many documents the search read in how long, the passages found.
func RetrievalTask(q string, documents int, retrieveMS float64, hits []RetrievalHit) views.RetrievalTask {
	t := views.RetrievalTask{Question: q, Documents: documents, RetrieveMS: retrieveMS}
	for _, h := range hits {
		t.Hits = append(t.Hits, views.RetrievedDoc{Title: h.Title, Score: fmt.Sprintf("%.3f", h.Score), Text: h.Text})
	}
	return t
}

// RetrievalAnswers fills the task's requests from their replies, in order
// (as many as came back).
func RetrievalAnswers(t *views.RetrievalTask, replies []AgentReply) {
	for i, r := range replies[:min(len(replies), len(t.Asks))] {
		t.Asks[i] = views.RetrievalAsk{PromptTokens: r.PromptTokens, Cached: r.Cached, Completion: r.CompletionTokens,
			PrefillMS: r.PrefillMS, DecodeMS: r.DecodeMS, TotalMS: r.MS, Answer: r.Content, WatchURL: r.watchURL()}
	}
}

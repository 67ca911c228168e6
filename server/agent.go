package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"stepthrough/api"
	"stepthrough/engine/chat"
	"stepthrough/views"
)

// The agent page: one question through the API as a client's tool loop
// runs it (every request its own inference pass with its own prefill, the
// tool run between them), and the same question answered with and
// without written-out reasoning.

const (
	agentMaxPasses  = 4 // inference requests before the loop gives up
	agentMaxTokens  = 96
	maxQuestionSize = 200
)

// localTools are the only tools the server ever executes: pure functions
// of their arguments (and the clock), never a shell or the network.
var localTools = map[string]func(args string) (string, error){
	"calculator": func(args string) (string, error) {
		var a struct {
			Expression string `json:"expression"`
		}
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			return "", fmt.Errorf("arguments %s: want {\"expression\": \"a+b\"}", args)
		}
		return chat.Calc(strings.ReplaceAll(a.Expression, " ", ""))
	},
	"clock": func(string) (string, error) { return time.Now().UTC().Format(time.RFC3339), nil },
}

func (s *Server) agentPage(c echo.Context) error {
	if !s.keyOK(c) { // the page runs API requests: the API's key guards it too
		return s.askKey(c, "")
	}
	q := strings.TrimSpace(c.QueryParam("q"))
	if q == "" {
		q = "What is 347 + 85?"
	}
	rq := strings.TrimSpace(c.QueryParam("rq"))
	if rq == "" {
		rq = "Where does Lily keep her red ball?"
	}
	p := views.AgentPage{Question: q, Model: s.reg.Default(), Retrieval: views.RetrievalTask{Question: rq}}
	for _, x := range []string{q, rq} {
		if len(x) > maxQuestionSize {
			p.Error = fmt.Sprintf("the question is %d bytes; the limit is %d", len(x), maxQuestionSize)
			return renderPageStatus(c, http.StatusBadRequest, views.AgentPageView(p))
		}
	}
	err := s.withWork(c, func(ctx context.Context) error {
		scope := s.cacheScope(c, "")
		if e := s.toolLoop(ctx, scope, &p); e != nil {
			p.Error = e.Message
			return nil
		}
		p.Direct, p.Thinking = s.reasoningRun(ctx, scope, q, ""), s.reasoningRun(ctx, scope, q, chat.SystemThink)
		p.Retrieval = s.retrievalTask(ctx, scope, rq, p.Model)
		return nil
	})
	if err != nil {
		return err
	}
	return renderPage(c, views.AgentPageView(p))
}

// toolLoop asks the question with the calculator offered, runs each call
// the model makes, and asks again with the result, until it answers.
func (s *Server) toolLoop(ctx context.Context, scope string, p *views.AgentPage) *api.Error {
	tool := map[string]any{"type": "function", "function": map[string]any{"name": api.CalculatorTool.Name, "description": api.CalculatorTool.Description, "parameters": api.CalculatorTool.Parameters}}
	messages := []any{map[string]any{"role": "user", "content": p.Question}}
	retry := false // the last pass's call was malformed: this pass is the model's second try
	for n := 1; n <= agentMaxPasses; n++ {
		body, _ := json.Marshal(map[string]any{"model": p.Model, "messages": messages, "temperature": 0, "max_tokens": agentMaxTokens, "tools": []any{tool}})
		start := time.Now()
		r, e := s.chatInProcess(ctx, scope, body)
		if e != nil {
			return e
		}
		cc := r.cc
		ms := float64(time.Since(start).Microseconds()) / 1000
		ch := cc.Choices[0]
		pass := views.AgentPass{N: n, WatchURL: "/requests/" + cc.ID, PromptTokens: cc.Usage.PromptTokens, CompletionTokens: cc.Usage.CompletionTokens,
			Cached: cc.Usage.PromptTokensDetails.CachedTokens, MS: ms, Finish: *ch.FinishReason, Request: string(body), Retry: retry}
		retry = false
		if ch.Message.Content != nil {
			pass.Content = *ch.Message.Content
		}
		p.TotalPrompt += cc.Usage.PromptTokens
		p.TotalCompletion += cc.Usage.CompletionTokens
		p.TotalMS += ms
		if len(ch.Message.ToolCalls) == 0 {
			p.Passes, p.Answer = append(p.Passes, pass), pass.Content
			return nil
		}
		messages = append(messages, ch.Message)
		for _, call := range ch.Message.ToolCalls {
			run, ok := localTools[call.Function.Name]
			out := "error: no such tool"
			retry = retry || !ok
			if ok {
				var err error
				if out, err = run(call.Function.Arguments); err != nil {
					out, retry = "error: "+err.Error(), true
				}
			}
			pass.Calls = append(pass.Calls, views.AgentCall{Name: call.Function.Name, Arguments: call.Function.Arguments, Result: out})
			messages = append(messages, map[string]any{"role": "tool", "tool_call_id": call.ID, "content": out})
		}
		p.Passes = append(p.Passes, pass)
	}
	p.Answer = fmt.Sprintf("(no answer after %d passes)", agentMaxPasses)
	return nil
}

var sumQuestion = regexp.MustCompile(`^What is (\d{1,9}) \+ (\d{1,9})\?$`)

// reasoningRun asks the question without tools, with an optional system
// message, and measures the reply.
func (s *Server) reasoningRun(ctx context.Context, scope, q, system string) views.ReasoningRun {
	r := views.ReasoningRun{System: system}
	messages := []any{map[string]any{"role": "user", "content": q}}
	if system != "" {
		messages = append([]any{map[string]any{"role": "system", "content": system}}, messages...)
	}
	body, _ := json.Marshal(map[string]any{"messages": messages, "temperature": 0, "max_tokens": 128})
	start := time.Now()
	ip, e := s.chatInProcess(ctx, scope, body)
	if e != nil {
		r.Error = e.Message
		return r
	}
	cc := ip.cc
	r.MS = float64(time.Since(start).Microseconds()) / 1000
	m := cc.Choices[0].Message
	if m.Content != nil {
		r.Answer = *m.Content
	}
	r.Reasoning, r.Tokens, r.WatchURL = m.ReasoningContent, cc.Usage.CompletionTokens, "/requests/"+cc.ID
	r.Correct = "—"
	if g := sumQuestion.FindStringSubmatch(q); g != nil {
		a, _ := strconv.Atoi(g[1])
		b, _ := strconv.Atoi(g[2])
		r.Correct = "no"
		if strings.Contains(r.Answer, fmt.Sprintf("= %d.", a+b)) {
			r.Correct = "yes"
		}
		r.Expected = strconv.Itoa(a + b)
	}
	return r
}

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"stepthrough/api"
	"stepthrough/engine/chat"
	"stepthrough/present"
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
	p := present.AgentForm(strings.TrimSpace(c.QueryParam("q")), strings.TrimSpace(c.QueryParam("rq")), s.reg.Default())
	q, rq := p.Question, p.Retrieval.Question
	for _, x := range []string{q, rq} {
		if len(x) > maxQuestionSize {
			p.Error = fmt.Sprintf("the question is %d bytes; the limit is %d", len(x), maxQuestionSize)
			return renderPageStatus(c, http.StatusBadRequest, views.AgentPageView(p))
		}
	}
	err := s.withWork(c, func(ctx context.Context) error {
		scope := s.cacheScope(c, "")
		steps, e := s.toolLoop(ctx, scope, q, p.Model)
		present.AgentLoop(&p, steps, e == nil, agentMaxPasses)
		if e != nil {
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

// replyOf is what the agent page reads of an in-process chat request
// that took ms milliseconds.
func replyOf(r inProcess, ms float64) present.AgentReply {
	cc := r.cc
	u, m := cc.Usage, cc.Choices[0].Message
	out := present.AgentReply{ID: cc.ID, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, MS: ms, Reasoning: m.ReasoningContent}
	out.PrefillMS, out.DecodeMS = phaseMS(r.times)
	if d := u.PromptTokensDetails; d != nil {
		out.Cached = d.CachedTokens
	}
	if f := cc.Choices[0].FinishReason; f != nil {
		out.Finish = *f
	}
	if m.Content != nil {
		out.Content = *m.Content
	}
	return out
}

// toolLoop asks the question with the calculator offered, runs each call
// the model makes, and asks again with the result, until it answers (or
// agentMaxPasses passes have not).
func (s *Server) toolLoop(ctx context.Context, scope, question, model string) ([]present.AgentStep, *api.Error) {
	tool := map[string]any{"type": "function", "function": map[string]any{"name": api.CalculatorTool.Name, "description": api.CalculatorTool.Description, "parameters": api.CalculatorTool.Parameters}}
	messages := []any{map[string]any{"role": "user", "content": question}}
	var steps []present.AgentStep
	retry := false // the last pass's call was malformed: this pass is the model's second try
	for range agentMaxPasses {
		body, _ := json.Marshal(map[string]any{"model": model, "messages": messages, "temperature": 0, "max_tokens": agentMaxTokens, "tools": []any{tool}})
		start := time.Now()
		r, e := s.chatInProcess(ctx, scope, body)
		if e != nil {
			return steps, e
		}
		step := present.AgentStep{Request: string(body), Reply: replyOf(r, float64(time.Since(start).Microseconds())/1000), Retry: retry}
		retry = false
		msg := r.cc.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return append(steps, step), nil
		}
		messages = append(messages, msg)
		for _, call := range msg.ToolCalls {
			out, ok := runTool(call.Function.Name, call.Function.Arguments)
			retry = retry || !ok
			step.Calls = append(step.Calls, present.ToolCall{Name: call.Function.Name, Arguments: call.Function.Arguments, Result: out})
			messages = append(messages, map[string]any{"role": "tool", "tool_call_id": call.ID, "content": out})
		}
		steps = append(steps, step)
	}
	return steps, nil
}

// runTool runs one of the local tools: its result, or the error the
// model reads (false: the call did not run).
func runTool(name, args string) (string, bool) {
	run, ok := localTools[name]
	if !ok {
		return "error: no such tool", false
	}
	out, err := run(args)
	if err != nil {
		return "error: " + err.Error(), false
	}
	return out, true
}

// reasoningRun asks the question without tools, with an optional system
// message, and measures the reply.
func (s *Server) reasoningRun(ctx context.Context, scope, q, system string) views.ReasoningRun {
	messages := []any{map[string]any{"role": "user", "content": q}}
	if system != "" {
		messages = append([]any{map[string]any{"role": "system", "content": system}}, messages...)
	}
	body, _ := json.Marshal(map[string]any{"messages": messages, "temperature": 0, "max_tokens": 128})
	start := time.Now()
	ip, e := s.chatInProcess(ctx, scope, body)
	if e != nil {
		return present.ReasoningRun(q, system, present.AgentReply{}, e.Message)
	}
	return present.ReasoningRun(q, system, replyOf(ip, float64(time.Since(start).Microseconds())/1000), "")
}

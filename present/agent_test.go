package present

import (
	"testing"

	"stepthrough/views"
)

// The tool loop's answer is the last pass's words when it called no
// tool, the loop's giving up when every pass called one, and none when an
// error cut it short; the totals add every pass.
func TestAgentLoopAnswer(t *testing.T) {
	call := AgentStep{Reply: AgentReply{ID: "a", PromptTokens: 10, CompletionTokens: 3, MS: 2, Content: "calling"}, Calls: []ToolCall{{Name: "calculator", Arguments: `{"expression":"1+1"}`, Result: "2"}}}
	answer := AgentStep{Reply: AgentReply{ID: "b", PromptTokens: 20, CompletionTokens: 5, MS: 3, Content: "1 + 1 = 2."}, Retry: true}
	for _, c := range []struct {
		name  string
		steps []AgentStep
		ended bool
		want  string
	}{
		{"answered", []AgentStep{call, answer}, true, "1 + 1 = 2."},
		{"gave up", []AgentStep{call, call}, true, "(no answer after 2 passes)"},
		{"cut short", []AgentStep{call}, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p views.AgentPage
			AgentLoop(&p, c.steps, c.ended, 2)
			if p.Answer != c.want || len(p.Passes) != len(c.steps) {
				t.Fatalf("answer %q after %d passes; want %q after %d", p.Answer, len(p.Passes), c.want, len(c.steps))
			}
			var prompt int
			for i, st := range c.steps {
				prompt += st.Reply.PromptTokens
				if got := p.Passes[i]; got.N != i+1 || got.WatchURL != "/requests/"+st.Reply.ID || len(got.Calls) != len(st.Calls) || got.Retry != st.Retry {
					t.Errorf("pass %d: %+v", i+1, got)
				}
			}
			if p.TotalPrompt != prompt {
				t.Errorf("total prompt tokens %d, want %d", p.TotalPrompt, prompt)
			}
		})
	}
}

// A sum's answer is judged by whether it states the sum; any other
// question is not judged; a failed request says why.
func TestReasoningRunJudgesSums(t *testing.T) {
	for _, c := range []struct {
		q, answer, failed, correct, expected string
	}{
		{"What is 347 + 85?", "347 + 85 = 432.", "", "yes", "432"},
		{"What is 347 + 85?", "347 + 85 = 422.", "", "no", "432"},
		{"Who is Lily?", "A girl.", "", "—", ""},
		{"What is 1 + 1?", "", "the model is busy", "", ""},
	} {
		r := ReasoningRun(c.q, "", AgentReply{ID: "x", Content: c.answer}, c.failed)
		if r.Correct != c.correct || r.Expected != c.expected || r.Error != c.failed {
			t.Errorf("%q answered %q: %+v", c.q, c.answer, r)
		}
	}
}

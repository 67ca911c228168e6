package server

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// The agent page's retrieval task: the search puts the passage that
// answers into the prompt, the prompt grows by it, and the same ask again
// reads the prompt's full blocks from the prefix cache, replying the same.
func TestAgentRetrievalTask(t *testing.T) {
	_, ts := servingServer(t) // the lesson models
	doc := get(t, ts.URL+"/agent?"+url.Values{"q": {"What is 347 + 85?"}, "rq": {"What cake does Sue bake?"}}.Encode())
	task := doc.Find(`[data-testid="retrieval"]`)
	if task.Length() != 1 {
		t.Fatalf("no retrieval task: %s", doc.Find(".error").Text())
	}
	if first := task.Find(`[data-testid="hit"]`).First().Text(); !strings.HasPrefix(first, "Sue the baker") {
		t.Errorf("first passage %q", first)
	}
	num := func(sel string, i int) int {
		n, err := strconv.Atoi(strings.TrimSpace(task.Find(sel).Eq(i).Text()))
		if err != nil {
			t.Fatalf("%s %d: %v", sel, i, err)
		}
		return n
	}
	prompt0, prompt1 := num(`[data-testid="task-prompt"]`, 0), num(`[data-testid="task-prompt"]`, 1)
	if prompt0 < 60 || prompt0 != prompt1 {
		t.Errorf("prompt tokens %d then %d: want the passages in it, the same twice", prompt0, prompt1)
	}
	if c0, c1 := num(`[data-testid="task-cached"]`, 0), num(`[data-testid="task-cached"]`, 1); c0 != 0 || c1 != (prompt1-1)/apiBlockSize*apiBlockSize {
		t.Errorf("cached %d then %d of %d: want 0, then every full block", c0, c1, prompt1)
	}
	if doc.Find(`[data-testid="retrieval-answer"]`).Text() == "" {
		t.Error("no answer")
	}
	// the tool loop's second request sends the conversation again: its
	// start comes from the cache
	passes := doc.Find(`[data-testid="pass-cached"]`)
	if passes.Length() < 2 || passes.Eq(1).Text() == "0" {
		t.Errorf("tool loop cached tokens: %q", passes.Text())
	}
	long := strings.Repeat("x", maxQuestionSize+1)
	getStatus(t, ts.URL+"/agent?rq="+long, 400)
}

// A tool call that cannot run is answered with its error and the model is
// asked again: that request is marked a retry.
func TestAgentMarksRetry(t *testing.T) {
	calc := localTools["calculator"]
	localTools["calculator"] = func(string) (string, error) { return "", errors.New("the expression could not be read") }
	t.Cleanup(func() { localTools["calculator"] = calc })
	_, ts := servingServer(t)
	doc := get(t, ts.URL+"/agent?"+url.Values{"q": {"What is 347 + 85?"}}.Encode())
	passes := doc.Find(`[data-testid="pass"]`)
	if passes.Length() < 2 {
		t.Fatalf("%d requests: the model did not ask for the tool", passes.Length())
	}
	if passes.Eq(0).Find(`[data-testid="retry"]`).Length() != 0 || passes.Eq(1).Find(`[data-testid="retry"]`).Length() != 1 {
		t.Errorf("retry marks: %q", passes.Text())
	}
	if r := doc.Find(`[data-testid="tool-result"]`).First().Text(); !strings.Contains(r, "could not be read") {
		t.Errorf("tool result %q", r)
	}
}

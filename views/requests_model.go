package views

// RequestList is the page of the API requests kept for watching.
type RequestList struct {
	Items []RequestItem
}

// APIKeyForm asks for the server's API key before a page behind it.
type APIKeyForm struct {
	Next string // the page to return to
	Nav  string // the site navigation's current page
	Note string // why the form is shown again
}

// RequestItem is one line of the list.
type RequestItem struct {
	ID, URL, Endpoint, Model, Time, Summary string
	Tokens                                  int
}

// RequestPage is one API request followed through the engine.
type RequestPage struct {
	ID, Endpoint, Model, Time string
	Streamed                  bool
	Request                   string // the body, indented
	Prompt                    string // as the template rendered it
	Template                  string
	PromptTokens              int
	Explorer                  string // the Explorer replaying it ("" when it cannot)
	ExplorerNote              string
	Tokens                    []RequestToken
	Logprobs                  bool
	LogprobsNote              string // where the log-probabilities came from, when not from the response
	Usage                     [3]int // prompt, completion, total
	Finish                    string
	Response                  string // the JSON body (indented) or the stream's events
	Seed                      string
	Cached                    int // prompt tokens read from the prefix cache
	// Probed is a request that asked for the model's internals (the
	// "stepthrough" extension): it ran outside the batch.
	Probed bool
}

// RequestToken is one generated token beside what the API said of it.
type RequestToken struct {
	Step    int
	ID      int32
	Text    string
	Logprob float64
	P       float64  // exp(logprob): the softmax panel at temperature 1
	Softmax string   // the Explorer at this token's softmax stage
	End     bool     // the end-of-generation token (counted in usage, not in logprobs)
	Pass    int      // the batch step (the server's forward pass) that computed it; -1: not recorded
	Mates   []string // the other requests in that pass, shortened
}

// AgentPage is one question through the API: a tool loop, and the same
// question answered with and without reasoning.
type AgentPage struct {
	Question, Model, Error       string
	Passes                       []AgentPass
	Answer                       string
	TotalPrompt, TotalCompletion int
	TotalMS                      float64
	Direct, Thinking             ReasoningRun
	Retrieval                    RetrievalTask
}

// RetrievalTask is a question answered from retrieved passages, asked
// twice: every phase measured.
type RetrievalTask struct {
	Question, Error string
	Documents       int // in the library searched
	RetrieveMS      float64
	Hits            []RetrievedDoc
	Asks            [2]RetrievalAsk // the same request twice: the second finds the prompt's blocks in the prefix cache
}

// RetrievedDoc is a passage the search put in the prompt.
type RetrievedDoc struct{ Title, Score, Text string }

// RetrievalAsk is one request of the task, measured.
type RetrievalAsk struct {
	PromptTokens, Cached, Completion int
	PrefillMS, DecodeMS, TotalMS     float64 // arrival to first token; the other tokens; the whole request
	Answer, WatchURL                 string
}

// AgentPass is one inference request of the loop, and the calls it asked
// for.
type AgentPass struct {
	N                              int
	WatchURL, Request              string
	PromptTokens, CompletionTokens int
	Cached                         int // prompt tokens read from the prefix cache
	MS                             float64
	Content, Finish                string
	Calls                          []AgentCall
	Retry                          bool // the pass before asked for a tool with arguments that did not parse
}

// AgentCall is a tool call the server executed.
type AgentCall struct {
	Name, Arguments, Result string
}

// ReasoningRun is the question answered once, measured.
type ReasoningRun struct {
	System, Error     string
	Reasoning, Answer string
	Tokens            int
	MS                float64
	Correct, Expected string
	WatchURL          string
}

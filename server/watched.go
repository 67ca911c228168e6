package server

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"stepthrough/api"
	"stepthrough/engine/sample"
)

// Watched is an API request kept for "Watch this request": what came in,
// the prompt the model read, and what went out, with the first choice's
// tokens and seed so the Explorer can replay it stage by stage.
type Watched struct {
	ID           string
	Time         time.Time
	Chat         bool
	Model        string
	Raw          string // the request body (up to maxWatchedBody)
	Prompt       string // as rendered: special-token markup included
	Template     string
	PromptTokens int
	PromptIDs    []int32 // the prompt's tokens (for the log-probabilities computed when the page is opened)
	Sampler      sample.Params
	// Ablate, Steer and MeanOver are the interventions the request ran
	// with ("stepthrough" extension), as the Explorer's replay applies them.
	Ablate, Steer, MeanOver string
	Probed                  bool        // it ran outside the batch, recording its internals
	Seed                    uint64      // choice 0's
	Generated               []int32     // choice 0's tokens
	Tokens                  []api.Token // with their log-probabilities, when the request asked for them
	Steps                   []tokenStep // choice 0's tokens: the batch step each came from, and its batch-mates
	Response                string      // the JSON body, or the stream's events
	Usage                   api.Usage
	Finish                  string
	Streamed                bool
}

// Bounds on what the watch list keeps: one request's response (the JSON
// body or the stream's events) and prompt are cut to these, and the list
// as a whole holds at most WatchBytes (the oldest requests go first).
const (
	maxWatchedResponse = 256 << 10
	maxWatchedPrompt   = 64 << 10
	maxWatchedTokens   = 2048 // choice 0's tokens kept with their logprobs
)

func (w *Watched) finish(choices []*api.Choice, u api.Usage, response string, steps []tokenStep) *Watched {
	w.Usage, w.Response, w.Steps = u, cut(response, maxWatchedResponse), steps
	w.Prompt = cut(w.Prompt, maxWatchedPrompt)
	if len(choices) > 0 {
		c := choices[0]
		w.Seed, w.Finish = c.Seed, c.Finish
		w.Generated, w.Tokens = c.IDs[:min(len(c.IDs), maxWatchedTokens)], c.Tokens[:min(len(c.Tokens), maxWatchedTokens)]
	}
	return w
}

// cut keeps the first n bytes of s, saying how many were left out.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s\n… (%d more bytes not kept)", strings.ToValidUTF8(s[:n], ""), len(s)-n)
}

// size estimates the bytes a kept request holds.
func (w *Watched) size() int {
	n := 512 + len(w.Raw) + len(w.Prompt) + len(w.Template) + len(w.Response) + 4*len(w.Generated) + 4*len(w.PromptIDs) + len(w.Ablate) + len(w.Steer) + len(w.MeanOver)
	for _, st := range w.Steps {
		n += 24
		for _, m := range st.Mates {
			n += 16 + len(m)
		}
	}
	for _, t := range w.Tokens {
		n += 64 + len(t.Text) + len(t.Bytes)
		for _, x := range t.Top {
			n += 48 + len(x.Text) + len(x.Bytes)
		}
	}
	return n
}

// boundedText collects a stream's transcript up to maxWatchedResponse
// bytes, counting the rest.
type boundedText struct {
	b    strings.Builder
	left int
}

func (t *boundedText) WriteString(s string) {
	if t.b.Len()+len(s) <= maxWatchedResponse {
		t.b.WriteString(s)
		return
	}
	t.left += len(s)
}

func (t *boundedText) String() string {
	if t.left == 0 {
		return t.b.String()
	}
	return fmt.Sprintf("%s… (%d more bytes not kept)", t.b.String(), t.left)
}

// watchList keeps the last requests, newest first.
type watchList struct {
	mu    sync.Mutex
	items []*Watched
	bytes int // their sizes, added up
}

// next is a new response id: OpenAI's prefix and 24 random hex digits
// (unguessable: a watched request may hold private text).
func (l *watchList) next(chat bool) string {
	var b [12]byte
	rand.Read(b[:])
	if chat {
		return "chatcmpl-" + hex.EncodeToString(b[:])
	}
	return "cmpl-" + hex.EncodeToString(b[:])
}

// add keeps w, then lets the oldest go while more than keep requests or
// more than budget bytes are held.
func (l *watchList) add(w *Watched, keep, budget int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append([]*Watched{w}, l.items...)
	l.bytes += w.size()
	for len(l.items) > 1 && (len(l.items) > keep || l.bytes > budget) {
		last := l.items[len(l.items)-1]
		l.bytes -= last.size()
		l.items = l.items[:len(l.items)-1]
	}
}

// held reports the requests kept and their bytes.
func (l *watchList) held() (n, bytes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.items), l.bytes
}

func (l *watchList) get(id string) *Watched {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.items {
		if w.ID == id {
			return w
		}
	}
	return nil
}

func (l *watchList) list() []*Watched {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*Watched(nil), l.items...)
}

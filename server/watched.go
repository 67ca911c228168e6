package server

import (
	"crypto/rand"
	"encoding/hex"
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
	Sampler      sample.Params
	Seed         uint64  // choice 0's
	Generated    []int32 // choice 0's tokens
	Tokens       []api.Token
	Response     string // the JSON body, or the stream's events
	Usage        api.Usage
	Finish       string
	Streamed     bool
}

func (w *Watched) finish(choices []*api.Choice, u api.Usage, response string) *Watched {
	w.Usage, w.Response = u, response
	if len(choices) > 0 {
		w.Seed, w.Generated, w.Tokens, w.Finish = choices[0].Seed, choices[0].IDs, choices[0].Tokens, choices[0].Finish
	}
	return w
}

// watchList keeps the last requests, newest first.
type watchList struct {
	mu    sync.Mutex
	items []*Watched
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

func (l *watchList) add(w *Watched, keep int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = append([]*Watched{w}, l.items...)
	if len(l.items) > keep {
		l.items = l.items[:keep]
	}
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

// Package serve serves many requests on one loaded model. A Scheduler
// runs them together: each step is one batched forward pass
// (engine.Loaded.Batch) holding one decode token for every running
// request and, under a token budget, chunks of the prompts still being
// read. Requests join and leave at every step (continuous batching) or
// only as a whole batch (static batching); they are admitted first come,
// first served while their KV cache fits; each has its own sampler and
// stop conditions (end of generation, a token limit, stop strings matched
// across token boundaries) and streams its text as it is produced.
//
// Every step is recorded (which requests, prefill or decode, how many
// tokens, how long), and every request's times (queueing, time to first
// token, time per output token), so a load can be measured, not guessed.
package serve

import (
	"errors"
	"fmt"
	"time"

	"stepthrough/engine/sample"
	"stepthrough/engine/stop"
)

// Policy is how requests join a batch.
type Policy string

const (
	// Continuous batching: a request joins at the next step when there is
	// room and leaves as soon as it finishes.
	Continuous Policy = "continuous"
	// Static batching: a batch is formed when none is running and runs
	// until its last request finishes; new requests wait for it.
	Static Policy = "static"
)

// Options configure a Scheduler.
type Options struct {
	Policy Policy // Continuous (default) or Static
	// MaxSeqs is the most requests running at once (1 to 256; 0: 16).
	MaxSeqs int
	// TokenBudget is the most tokens in one step, decode tokens and
	// prompt chunks together (0: the model's pass limit).
	TokenBudget int
	// ChunkedPrefill lets a prompt be read in chunks that share a step
	// with other requests' decode tokens. Without it a step reads whole
	// prompts only (and no decode tokens), so a long prompt pauses every
	// running request's stream while it is read.
	ChunkedPrefill bool
	// KVPositions is the KV cache shared by the running requests, in
	// positions: a request reserves its prompt plus its token limit when
	// admitted, as a contiguous cache sized for the longest reply must
	// (0: MaxSeqs × the model's context).
	KVPositions int
	// Paged keeps the KV cache in blocks of BlockSize positions (0: 16)
	// from one pool of KVPositions: a request takes blocks as it grows
	// instead of reserving its longest reply, requests that start with the
	// same tokens share their prompt's full blocks, and when the pool runs
	// out the request admitted last is preempted: its blocks are freed and
	// it waits at the head of the queue, to read its prompt and its reply
	// so far again when blocks free up (recomputation, as vLLM does).
	// Paged runs on the CPU backend.
	Paged     bool
	BlockSize int
	// PrefixCache (with Paged) keeps the full prompt blocks of requests
	// that ended, keyed by a hash of their scope (Request.CacheScope) and
	// their tokens from position 0, so a later request of the same scope
	// that starts the same way (a shared system prompt, the same
	// conversation asked again) reads only the rest; retained blocks are
	// reused for other tokens least recently used first, when no free
	// block is left.
	PrefixCache bool
	// Steps is how many recent steps are kept for Steps (0: 4096).
	Steps int
}

// Request is one generation.
type Request struct {
	Label     string  // shown on the serving page (optional)
	Prompt    []int32 // tokens, BOS included when the model wants one
	MaxTokens int     // at least 1
	Stop      []string
	Sampling  sample.Params
	// IgnoreEOS generates MaxTokens whatever the model samples (a
	// benchmark's fixed-length reply); the end-of-generation token is
	// then an ordinary token.
	IgnoreEOS bool
	// OnToken, when set, sees each generated token in the scheduler's
	// goroutine before its event is sent: it must be quick and must not
	// block. Returning true ends the request with this token (FinishStop):
	// a caller's own stop rule, such as a closed tool call.
	OnToken func(Token) bool
	// CacheScope is whose KV blocks the request may share, live or kept
	// (Paged): only those of requests with the same scope, so what it
	// reads from the cache (Times.Cached) tells nothing of other scopes'
	// prompts. An API server names its client here; "" is one scope.
	CacheScope string
}

// Token is a generated token as OnToken sees it.
type Token struct {
	ID     int32
	Logits []float32 // what it was sampled from (valid during the call only)
	Step   int       // the step that computed it (Step.Index)
	s      *Scheduler
	at     int // its request's place in the step
}

// Mates are the other requests in the token's step, by label (call it
// during OnToken only: it reads the step being finished).
func (t Token) Mates() []string { return t.s.mates(t.at) }

// Finish reasons.
const (
	FinishEOS       = stop.EOS    // the model ended its turn
	FinishLength    = stop.Length // MaxTokens reached
	FinishStop      = stop.Stop   // a stop string (not included in the text)
	FinishCancelled = "cancelled" // the caller cancelled, or the scheduler stopped
	FinishError     = "error"
)

// Event is one streamed update of a request: a generated token and the
// text it made final (empty while a stop string may be forming), or the
// end.
type Event struct {
	Token  int32
	Text   string
	Done   bool
	Finish string // with Done
	Err    error  // with FinishError
	Times  Times  // with Done
}

// Times are one request's measured times.
type Times struct {
	ID                                      int // the request's (Handle.ID)
	Arrived, Admitted, FirstToken, Finished time.Time
	PromptTokens, Generated                 int
	Preemptions                             int
	// Cached is how many prompt tokens were read from KV blocks another
	// request of its scope had computed (a shared or retained prefix), not
	// computed.
	Cached int
}

// Queued is the time from arrival to admission.
func (t Times) Queued() time.Duration { return t.Admitted.Sub(t.Arrived) }

// TTFT is the time from arrival to the first generated token.
func (t Times) TTFT() time.Duration { return t.FirstToken.Sub(t.Arrived) }

// TPOT is the mean time per output token after the first (0 for one token).
func (t Times) TPOT() time.Duration {
	if t.Generated < 2 {
		return 0
	}
	return t.Finished.Sub(t.FirstToken) / time.Duration(t.Generated-1)
}

// Part is one request's share of a step.
type Part struct {
	Req     int  // the request's ID
	Tokens  int  // tokens it fed
	Prefill bool // prompt tokens (else one decode token)
	Last    bool // the request finished at this step
	KV      int  // KV positions the request holds after the step (0 once it ended)
}

// Step is one batched forward pass.
type Step struct {
	Index   int
	At      time.Duration // since the scheduler started
	Dur     time.Duration // the pass and the sampling after it
	Parts   []Part
	Running int // requests running after the step
	Waiting int // requests queued after the step
	KVUsed  int // positions the running requests have filled
	KVHeld  int // positions they have reserved (paged: blocks held × block size)
	// Preempted are the requests preempted to make room for this step.
	Preempted []int
}

// Tokens is the step's total tokens.
func (s Step) Tokens() int {
	n := 0
	for _, p := range s.Parts {
		n += p.Tokens
	}
	return n
}

// ErrClosed is returned by Submit after the scheduler stopped.
var ErrClosed = errors.New("serve: the scheduler has stopped")

func (o Options) check() error {
	switch o.Policy {
	case Continuous, Static:
	default:
		return fmt.Errorf("serve: unknown batching policy %q (continuous or static)", o.Policy)
	}
	if o.MaxSeqs < 1 || o.MaxSeqs > 256 {
		return fmt.Errorf("serve: %d sequences at once, want 1 to 256", o.MaxSeqs)
	}
	if o.TokenBudget < 1 {
		return fmt.Errorf("serve: token budget %d, want at least 1", o.TokenBudget)
	}
	if o.Paged && (o.BlockSize < 1 || o.BlockSize > 1024 || o.KVPositions < o.BlockSize) {
		return fmt.Errorf("serve: paged KV needs a block size of 1 to 1024 positions and at least one block (block size %d, %d positions)", o.BlockSize, o.KVPositions)
	}
	if o.TokenBudget < o.MaxSeqs {
		return fmt.Errorf("serve: a token budget of %d cannot hold a decode token for each of %d sequences", o.TokenBudget, o.MaxSeqs)
	}
	return nil
}

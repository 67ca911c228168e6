package serve

import "time"

// Totals count a scheduler's work since it was made (what a metrics page
// exports).
type Totals struct {
	Requests     int // requests that ended (any reason)
	Cancelled    int // of those, requests their caller cancelled (a client gone) or the scheduler's end stopped
	PromptTokens int // prompt tokens of admitted requests
	CachedTokens int // of those, tokens read from shared or retained KV blocks
	PrefillRead  int // prompt tokens computed (preempted requests' replays too)
	Generated    int // tokens sampled
	Steps        int // batched passes
	DecodeSteps  int // passes holding at least one decode token
	DecodeSeqs   int // decode tokens over those passes (÷ DecodeSteps: sequences per decode)
	Preemptions  int
	PrefillNanos int64 // time of passes spent on prompt tokens (a mixed pass split by its tokens)
	DecodeNanos  int64 // the rest
}

// Gauges are a scheduler's state now.
type Gauges struct {
	Running, Waiting     int
	KVBlocksUsed, KVFree int // paged: blocks in use, blocks free (retained ones included)
	KVCached             int // paged: retained blocks no request uses
	BlockSize            int // paged; 0 when contiguous
}

// count adds a finished step's parts and time to the totals (s.mu held).
func (s *Scheduler) count(parts []Part, dur time.Duration) {
	t := &s.totals
	t.Steps++
	prefill, decode := 0, 0
	for _, p := range parts {
		if p.Prefill {
			prefill += p.Tokens
		} else {
			decode++
		}
	}
	t.PrefillRead += prefill
	if decode > 0 {
		t.DecodeSteps++
		t.DecodeSeqs += decode
	}
	pre := int64(dur) * int64(prefill) / int64(max(1, prefill+decode))
	t.PrefillNanos += pre
	t.DecodeNanos += int64(dur) - pre
}

// Totals returns the counts so far.
func (s *Scheduler) Totals() Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals
}

// Gauges returns the scheduler's state now.
func (s *Scheduler) Gauges() Gauges {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := Gauges{Running: len(s.running), Waiting: len(s.queue)}
	if s.pool != nil {
		free := s.pool.Free()
		g.KVBlocksUsed, g.KVFree, g.KVCached, g.BlockSize = s.pool.Blocks-free, free, s.pool.Cached(), s.pool.BlockSize
	}
	return g
}

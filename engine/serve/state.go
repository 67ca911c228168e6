package serve

import (
	"math"
	"slices"
	"time"
)

// SeqState is one running request as a page shows it.
type SeqState struct {
	ID        int    `json:"id"`
	Label     string `json:"label"`
	Prompt    int    `json:"prompt"`    // prompt tokens
	Read      int    `json:"read"`      // prompt tokens read so far
	Generated int    `json:"generated"` // tokens generated so far
	MaxTokens int    `json:"max_tokens"`
	KVUsed    int    `json:"kv_used"` // positions filled
	KVHeld    int    `json:"kv_held"` // positions reserved
	Text      string `json:"text"`    // the text streamed so far
}

// Snapshot is the scheduler's state at one moment.
type Snapshot struct {
	Running     []SeqState `json:"running"`
	Waiting     int        `json:"waiting"`
	KVHeld      int        `json:"kv_held"`
	KVPositions int        `json:"kv_positions"`
	Steps       int        `json:"steps"`
}

// Snapshot reports the running requests and the queue.
func (s *Scheduler) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := Snapshot{Waiting: len(s.queue), KVHeld: s.held, KVPositions: s.opt.KVPositions, Steps: s.nsteps}
	for _, q := range s.running {
		st := SeqState{ID: q.id, Label: q.req.Label, Prompt: len(q.req.Prompt), Read: q.read, Generated: q.generated, MaxTokens: q.req.MaxTokens, KVHeld: q.need, Text: string(q.text)}
		if q.sess != nil {
			st.KVUsed = q.sess.Pos()
		}
		sn.Running = append(sn.Running, st)
	}
	return sn
}

// Steps returns the recent steps, oldest first.
func (s *Scheduler) Steps() []Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.steps)
}

// Completed returns the times of every request that finished normally.
func (s *Scheduler) Completed() []Times {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.done)
}

// Summary is a load's measured figures.
type Summary struct {
	Requests        int           `json:"requests"`
	PromptTokens    int           `json:"prompt_tokens"`
	CachedTokens    int           `json:"cached_tokens"`  // prompt tokens read from shared or retained KV blocks
	PrefillTokens   int           `json:"prefill_tokens"` // prompt tokens computed (a preempted request's replay too)
	Generated       int           `json:"generated_tokens"`
	Wall            time.Duration `json:"wall_ns"` // first arrival to last finish
	TokensPerSecond float64       `json:"tokens_per_second"`
	TTFT            Percentiles   `json:"ttft"`
	TPOT            Percentiles   `json:"tpot"`
	Queued          Percentiles   `json:"queued"`
	Steps           int           `json:"steps"`
	PrefillTime     time.Duration `json:"prefill_ns"` // time in steps that read prompt tokens
	DecodeTime      time.Duration `json:"decode_ns"`  // time in steps of decode tokens only
	MeanBatch       float64       `json:"mean_batch"` // requests per step
	PeakRunning     int           `json:"peak_running"`
	PeakKVUsed      int           `json:"peak_kv_used"` // positions filled, at the fullest step
	PeakKVHeld      int           `json:"peak_kv_held"` // positions reserved or in held blocks
	Preemptions     int           `json:"preemptions"`
}

// Percentiles of a duration, nearest-rank.
type Percentiles struct {
	P50  time.Duration `json:"p50_ns"`
	P95  time.Duration `json:"p95_ns"`
	Max  time.Duration `json:"max_ns"`
	Mean time.Duration `json:"mean_ns"`
}

// Percentile is the nearest-rank p-th percentile of sorted (0 < p ≤ 100).
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(k, len(sorted)-1))]
}

func percentiles(d []time.Duration) Percentiles {
	if len(d) == 0 {
		return Percentiles{}
	}
	slices.Sort(d)
	var sum time.Duration
	for _, v := range d {
		sum += v
	}
	return Percentiles{P50: Percentile(d, 50), P95: Percentile(d, 95), Max: d[len(d)-1], Mean: sum / time.Duration(len(d))}
}

// Summarize measures a load from its requests' times and its steps.
// TPOT counts requests that generated at least two tokens.
func Summarize(times []Times, steps []Step) Summary {
	var sm Summary
	var ttft, tpot, queued []time.Duration
	var first, last time.Time
	for _, t := range times {
		sm.Requests++
		sm.PromptTokens += t.PromptTokens
		sm.CachedTokens += t.Cached
		sm.Generated += t.Generated
		ttft, queued = append(ttft, t.TTFT()), append(queued, t.Queued())
		if t.Generated >= 2 {
			tpot = append(tpot, t.TPOT())
		}
		if first.IsZero() || t.Arrived.Before(first) {
			first = t.Arrived
		}
		if t.Finished.After(last) {
			last = t.Finished
		}
	}
	sm.TTFT, sm.TPOT, sm.Queued = percentiles(ttft), percentiles(tpot), percentiles(queued)
	if sm.Requests > 0 {
		sm.Wall = last.Sub(first)
		sm.TokensPerSecond = float64(sm.Generated) / sm.Wall.Seconds()
	}
	parts := 0
	for _, st := range steps {
		sm.Steps++
		parts += len(st.Parts)
		sm.PeakRunning = max(sm.PeakRunning, st.Running+countLast(st))
		sm.PeakKVUsed, sm.PeakKVHeld = max(sm.PeakKVUsed, st.KVUsed), max(sm.PeakKVHeld, st.KVHeld)
		sm.Preemptions += len(st.Preempted)
		prefill := false
		for _, p := range st.Parts {
			if p.Prefill {
				prefill = true
				sm.PrefillTokens += p.Tokens
			}
		}
		if prefill {
			sm.PrefillTime += st.Dur
		} else {
			sm.DecodeTime += st.Dur
		}
	}
	if sm.Steps > 0 {
		sm.MeanBatch = float64(parts) / float64(sm.Steps)
	}
	return sm
}

// countLast is how many of a step's requests finished in it (they ran in
// it but are no longer counted as running after it).
func countLast(st Step) int {
	n := 0
	for _, p := range st.Parts {
		if p.Last {
			n++
		}
	}
	return n
}

package serve

import (
	"context"
	"fmt"
	"time"
)

// reap ends cancelled requests (s.mu held).
func (s *Scheduler) reap() {
	keep := s.queue[:0]
	for _, q := range s.queue {
		if q.cancelled {
			s.end(q, Event{Done: true, Finish: FinishCancelled})
		} else {
			keep = append(keep, q)
		}
	}
	clear(s.queue[len(keep):])
	s.queue = keep
	run := s.running[:0]
	for _, q := range s.running {
		if q.cancelled {
			s.end(q, Event{Done: true, Finish: FinishCancelled})
		} else {
			run = append(run, q)
		}
	}
	clear(s.running[len(run):])
	s.running = run
}

// admit moves queued requests to running, first come first served: under
// continuous batching while a sequence slot and the KV positions it
// reserves are free (the first that does not fit waits, and so does
// everyone behind it); under static batching only when nothing runs.
func (s *Scheduler) admit() {
	if s.opt.Policy == Static && len(s.running) > 0 {
		return
	}
	for len(s.queue) > 0 && len(s.running) < s.opt.MaxSeqs {
		q := s.queue[0]
		if s.pool != nil {
			ok, err := s.admitPaged(q)
			if err != nil {
				s.queue = s.queue[1:]
				s.end(q, Event{Done: true, Finish: FinishError, Err: fmt.Errorf("serve: %w", err)})
				continue
			}
			if !ok {
				return
			}
		} else {
			if s.held+q.need > s.opt.KVPositions {
				return
			}
			sess, err := s.l.NewSession(q.need)
			if err != nil {
				s.queue = s.queue[1:]
				s.end(q, Event{Done: true, Finish: FinishError, Err: fmt.Errorf("serve: %w", err)})
				continue
			}
			q.sess = sess
			s.held += q.need
		}
		s.queue = s.queue[1:]
		if q.times.Admitted.IsZero() {
			q.times.Admitted = time.Now()
			s.totals.PromptTokens += len(q.req.Prompt)
			s.totals.CachedTokens += q.times.Cached
		}
		s.running = append(s.running, q)
	}
}

// plan lays out the next step (s.mu held): with chunked prefill, every
// running request's decode token first, then prompt chunks in arrival
// order while the token budget lasts; without it, whole prompts in
// arrival order when any is waiting to be read (no decode tokens), else
// the decode tokens.
func (s *Scheduler) plan() []Part {
	s.items, s.batch = s.items[:0], s.batch[:0]
	var parts []Part
	add := func(q *seq, toks []int32, prefill bool) {
		s.items = append(s.items, batchItem(q, toks))
		s.batch = append(s.batch, q)
		parts = append(parts, Part{Req: q.id, Tokens: len(toks), Prefill: prefill})
	}
	budget := s.opt.TokenBudget
	reading := false
	for _, q := range s.running {
		reading = reading || q.read < len(q.feed)
	}
	if s.opt.ChunkedPrefill || !reading {
		for _, q := range s.running {
			if q.read == len(q.feed) {
				add(q, q.one[:], false)
				budget--
			}
		}
	}
	for _, q := range s.running {
		rest := len(q.feed) - q.read
		if rest == 0 || budget == 0 {
			continue
		}
		n := min(rest, budget)
		if !s.opt.ChunkedPrefill && n < rest && len(parts) > 0 {
			break // a whole prompt waits for a step of its own
		}
		add(q, q.feed[q.read:q.read+n], true)
		budget -= n
	}
	return parts
}

// step runs one batched pass and what follows it: sampling, streaming,
// stop conditions.
func (s *Scheduler) step(ctx context.Context, parts []Part) error {
	start := time.Now()
	s.logits = s.logits[:0]
	for range s.items {
		s.logits = append(s.logits, nil)
	}
	err := s.l.Batch(ctx, s.items, s.logits)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, q := range s.batch { // a failed pass ends the requests in it
			q.cancelled = true
			s.end(q, Event{Done: true, Finish: FinishError, Err: fmt.Errorf("serve: step: %w", err)})
		}
		s.dropEnded()
		return nil
	}
	now := time.Now()
	for i, q := range s.batch {
		if parts[i].Prefill {
			q.read += parts[i].Tokens
			if s.pool != nil {
				q.sess.RegisterPrefix()
			}
			if q.read < len(q.feed) {
				continue
			}
		}
		parts[i].Last = s.emit(q, s.logits[i], now, i)
	}
	for i, q := range s.batch {
		parts[i].KV = s.kvHeld(q)
	}
	s.dropEnded()
	st := Step{Index: s.nsteps, At: start.Sub(s.start), Dur: time.Since(start), Parts: parts, Running: len(s.running), Waiting: len(s.queue), KVHeld: s.held, Preempted: s.preempted}
	s.preempted = nil
	s.count(parts, st.Dur)
	for _, q := range s.running {
		st.KVUsed += q.sess.Pos()
	}
	if s.pool != nil {
		st.KVHeld = s.pool.Used() * s.pool.BlockSize
	}
	s.nsteps++
	if len(s.steps) >= s.opt.Steps {
		copy(s.steps, s.steps[1:])
		s.steps = s.steps[:len(s.steps)-1]
	}
	s.steps = append(s.steps, st)
	if s.onStep != nil {
		s.onStep(st)
	}
	return nil
}

// emit samples q's next token from logits (q is s.batch[at]), streams it
// and applies the stop conditions; it reports whether q finished.
func (s *Scheduler) emit(q *seq, logits []float32, now time.Time, at int) bool {
	id := q.smp.Sample(logits, nil)
	q.smp.Accept(id)
	q.out = append(q.out, id)
	q.generated++
	q.times.Generated = q.generated
	s.totals.Generated++
	if q.generated == 1 {
		q.times.FirstToken = now
	}
	text, finish := q.end.Push(id)
	if q.req.OnToken != nil && q.req.OnToken(Token{ID: id, Logits: logits, Step: s.nsteps, s: s, at: at}) && finish == "" {
		finish = FinishStop
	}
	q.events <- Event{Token: id, Text: s.keep(q, text)}
	if finish == "" {
		q.one[0] = id
		return false
	}
	s.end(q, Event{Done: true, Finish: finish})
	return true
}

// mates are the labels of the step's requests other than s.batch[at].
func (s *Scheduler) mates(at int) []string {
	var m []string
	for i, q := range s.batch {
		if i != at {
			m = append(m, q.label)
		}
	}
	return m
}

func (s *Scheduler) keep(q *seq, text string) string {
	q.text = append(q.text, text...)
	return text
}

// end finishes q: its last event, its times, its KV positions back.
func (s *Scheduler) end(q *seq, ev Event) {
	if q.events == nil {
		return
	}
	q.times.Finished = time.Now()
	if q.sess != nil {
		q.sess.Close()
		q.sess = nil
		if s.pool == nil {
			s.held -= q.need
		}
	}
	q.cancelled = true // dropEnded removes it from running
	ev.Times = q.times
	s.totals.Requests++
	if ev.Finish == FinishCancelled {
		s.totals.Cancelled++
	}
	q.events <- ev
	close(q.events)
	q.events = nil
	if ev.Finish != FinishCancelled && ev.Finish != FinishError {
		s.done = append(s.done, q.times)
	}
}

// dropEnded removes ended requests from running.
func (s *Scheduler) dropEnded() {
	run := s.running[:0]
	for _, q := range s.running {
		if q.events != nil {
			run = append(run, q)
		}
	}
	clear(s.running[len(run):])
	s.running = run
}

// kvHeld is the KV positions q holds: its blocks (paged) or its
// reservation (contiguous); 0 once it has ended.
func (s *Scheduler) kvHeld(q *seq) int {
	switch {
	case q.sess == nil:
		return 0
	case s.pool != nil:
		return q.sess.KVBlocks() * s.pool.BlockSize
	}
	return q.need
}

package session

import (
	"context"
	"fmt"
	"slices"
	"time"

	"stepthrough/engine/hooks"
	"stepthrough/engine/speculative"
	"stepthrough/engine/trace"
	"stepthrough/spec"
)

// Speculative decoding in the Explorer (spec.Run.Draft): token step 0 is
// the target's own prefill and first token, as in a plain run; every
// later token step is one round — the draft proposes k tokens, the
// target's batched verify pass (the step's embed and layer stages),
// accept or reject, rollback — recorded by the same trace from the
// decoder's hooks.

// openDraft makes (or keeps) the draft's engine session for run r and
// returns the bytes its cache will hold; it is closed when r has no draft.
func (s *Session) openDraft(r spec.Run, promptTokens int) (int64, error) {
	if r.Draft == "" {
		s.closeDraft()
		return 0, nil
	}
	dl, err := s.eng.Draft(r.Model, r.Draft, r.Backend)
	if err != nil {
		return 0, err
	}
	if promptTokens+r.MaxTokens > dl.Model.Config.ContextLen {
		return 0, errorf("the prompt is %d tokens; with %d new ones that exceeds the draft's context of %d", promptTokens, r.MaxTokens, dl.Model.Config.ContextLen)
	}
	key := r.Model + "|" + r.Draft + "|" + r.Backend
	if s.des == nil || s.desKey != key {
		des, err := dl.NewSession(0)
		if err != nil {
			return 0, fmt.Errorf("draft %s: %w", r.Draft, err)
		}
		s.closeDraft()
		s.des, s.desKey = des, key
	}
	c := dl.Model.Config
	return int64(c.Layers) * int64(c.KVDim()) * 8 * int64(promptTokens+r.MaxTokens+r.DraftK), nil
}

func (s *Session) closeDraft() {
	if s.des != nil {
		s.des.Close()
		s.des = nil
	}
	s.dec = nil
}

// startDraft hands the run to a speculative decoder after the target's
// prefill and first token (the draft catches up on the prompt, unseen by
// the trace). The target's sampler settings and drawn seed serve both
// models.
func (s *Session) startDraft(ctx context.Context) error {
	if s.run.Draft == "" || s.done {
		return nil
	}
	p := s.run.Sampler
	p.Seed, p.SeedSet = s.smp.Seed(), true
	dec, err := speculative.New(s.es, s.des, p, p, speculative.Options{K: s.run.DraftK})
	if err != nil {
		return err
	}
	if err := s.timePlainStep(ctx); err != nil {
		return err
	}
	s.des.Reset()
	if err := dec.Continue(ctx, append(append([]int32(nil), s.Prompt...), s.Gen...)); err != nil {
		return fmt.Errorf("the draft failed: %w", err)
	}
	s.dec = dec
	return nil
}

// plainSteps is how many plain decode steps a speculative run times, after
// one untimed warm-up (the median is kept), as the speed its rounds are
// compared with.
const plainSteps = 3

// timePlainStep measures what plain decoding would do next: one pass of
// the first generated token alone, rolled back each time (the first round
// feeds it again). Like the rounds, it is recorded as the Explorer records
// every pass, by a recorder of its own that is then dropped: the trace
// does not see it.
func (s *Session) timePlainStep(ctx context.Context) error {
	pos := s.es.Pos()
	var t [plainSteps + 1]float64 // the first is a warm-up
	for i := range t {
		rctx := hooks.WithHooks(hooks.Without(ctx), trace.NewRecorder(recording).Hooks())
		start := time.Now()
		if _, err := s.es.Eval(rctx, s.Gen[:1]); err != nil {
			return fmt.Errorf("the engine failed: %w", err)
		}
		t[i] = ms(time.Since(start))
		s.es.Truncate(pos)
	}
	timed := t[1:]
	slices.Sort(timed)
	s.plainStepMS, s.plainStepRange = timed[plainSteps/2], [2]float64{timed[0], timed[plainSteps-1]}
	return nil
}

// decodeRound runs one speculative round as the next token step.
func (s *Session) decodeRound(hctx context.Context) (bool, error) {
	start := time.Now()
	toks, err := s.dec.Step(hctx)
	if err != nil {
		s.done = true
		return false, fmt.Errorf("the engine failed: %w", err)
	}
	s.forwards++
	n := 0
	for _, id := range toks {
		n++
		if !s.emit(id) {
			break
		}
	}
	s.GenAt = append(s.GenAt, len(s.Gen))
	s.decodeMS = append(s.decodeMS, ms(time.Since(start)))
	s.decodeTokens += n
	s.cur.Steps = s.rec.Steps()
	return true, nil
}

package compare

import (
	"context"
	"fmt"
	"slices"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/hooks"
	"stepthrough/engine/sample"
	"stepthrough/engine/speculative"
	"stepthrough/engine/stop"
)

// SpecStats are what a speculative lane's draft achieved.
type SpecStats struct {
	Rounds       int     `json:"rounds"`
	Drafted      int     `json:"drafted"`
	Accepted     int     `json:"accepted"`
	Acceptance   float64 `json:"acceptance"`
	MeanAccepted float64 `json:"mean_accepted"` // proposals kept per round
	DraftMS      float64 `json:"draft_ms"`
	VerifyMS     float64 `json:"verify_ms"`
	// DraftPrefillMS is the draft's own pass over the prompt, outside the
	// lane's decode time (the target's prefill is shared by every lane).
	DraftPrefillMS float64 `json:"draft_prefill_ms"`
}

// specLane runs a speculative lane: the first token is sampled from the
// shared prefill's logits as in a plain lane, then each round's draft
// proposes and the lane's fork of the target verifies. Steps record each
// token's log-probability under the model's raw logits and the target's
// top candidates after its chain.
func specLane(ctx context.Context, base *engine.Session, st Strategy, prompt []int32, first []float32, opt Options) (lane Lane, copyMS float64, err error) {
	lane = Lane{Strategy: st}
	if opt.Draft == nil {
		return lane, 0, fmt.Errorf("lane %q: speculative lanes are not offered here", st.Spec)
	}
	dl, err := opt.Draft(st.Draft)
	if err != nil {
		return lane, 0, fmt.Errorf("lane %q: %w", st.Spec, err)
	}
	r, copyMS, err := fork(base)
	if err != nil {
		return lane, 0, err
	}
	defer r.Close()
	ds, err := dl.NewSession(r.Capacity())
	if err != nil {
		return lane, copyMS, fmt.Errorf("lane %q: draft: %w", st.Spec, err)
	}
	defer ds.Close()
	dec, err := speculative.New(r, ds, st.Params, st.Params, speculative.Options{K: st.K})
	if err != nil {
		return lane, copyMS, fmt.Errorf("lane %q: %w", st.Spec, err)
	}
	lane.Seed = dec.Seed()
	// the first token, as a plain lane draws it (the decoder's generator
	// draws the rest)
	smp, err := sample.New(st.Params)
	if err != nil {
		return lane, copyMS, err
	}
	smp.Accept(prompt...)
	start := time.Now()
	var step Step
	id := smp.Sample(first, &sample.Observer{Draw: func(d sample.DrawResult) {
		step.U, step.Greedy, step.Top = d.U, d.Greedy, drawTop(d)
	}})
	step.Token, step.LogProb = id, sample.LogSoftmax(first)[id]
	lane.Tokens, lane.Steps = append(lane.Tokens, id), append(lane.Steps, step)
	firstMS := ms(time.Since(start))
	stats := &SpecStats{}
	lane.Speculative = stats
	end := stop.NewEnd(base.Model.Tokenizer, stop.Limits{MaxTokens: opt.N})
	if finish := end.Next(id); finish != "" {
		lane.ended = finish == stop.EOS
		lane.DecodeMS = firstMS
		return lane, copyMS, nil
	}
	start = time.Now()
	if err := dec.Continue(ctx, append(slices.Clone(prompt), id)); err != nil {
		return lane, copyMS, err
	}
	stats.DraftPrefillMS = ms(time.Since(start))
	var rounds []hooks.Speculative
	hctx := hooks.WithHooks(ctx, &hooks.Hooks{OnSpeculative: func(e hooks.Speculative) { rounds = append(rounds, e) }})
	start = time.Now()
	for finish := ""; finish == ""; {
		n := len(rounds)
		toks, err := dec.Step(hctx)
		if err != nil {
			return lane, copyMS, err
		}
		for i, t := range toks {
			lane.Tokens = append(lane.Tokens, t)
			lane.Steps = append(lane.Steps, roundStep(rounds[n], i, t))
			if finish = end.Next(t); finish != "" {
				lane.ended = finish == stop.EOS
				break
			}
		}
	}
	lane.DecodeMS = firstMS + ms(time.Since(start))
	s := dec.Stats()
	stats.Rounds, stats.Drafted, stats.Accepted = s.Rounds, s.Drafted, s.Accepted
	stats.Acceptance, stats.MeanAccepted = s.AcceptanceRate(), s.MeanAccepted()
	stats.DraftMS, stats.VerifyMS = ms(s.Draft), ms(s.Verify)
	return lane, copyMS, nil
}

// roundStep is the Step of a round's i-th emitted token t: its raw
// log-probability, and the target's top candidates after its chain (its
// draws are the round's, shown by the Explorer's speculative mode, not
// one u per token).
func roundStep(e hooks.Speculative, i int, t int32) Step {
	st := Step{Token: t, Greedy: len(e.U) == 0}
	if i < len(e.LogProbs) {
		st.LogProb = e.LogProbs[i]
	}
	if i < len(e.PTop) {
		for _, c := range e.PTop[i][:min(5, len(e.PTop[i]))] {
			st.Top = append(st.Top, Candidate{c.ID, c.P})
		}
	}
	return st
}

// Speed is a lane's measured decoding speed, as shown beside the others:
// the median and the range over its runs, "812.4 t/s (790.1–830.6, 3
// runs; 23 tokens)".
func (l Lane) Speed() string {
	if l.TokensPerSec <= 0 || len(l.Speeds) == 0 {
		return "—"
	}
	lo, hi := slices.Min(l.Speeds), slices.Max(l.Speeds)
	return fmt.Sprintf("%.1f t/s (%.1f–%.1f, %d runs; %d tokens)", l.TokensPerSec, lo, hi, len(l.Speeds), len(l.Tokens)-1)
}

// DraftSummary is what a speculative lane's draft achieved, or "—".
func (l Lane) DraftSummary() string {
	s := l.Speculative
	if s == nil || s.Rounds == 0 {
		return "—"
	}
	total := s.DraftMS + s.VerifyMS
	return fmt.Sprintf("%.0f%% of %d kept, %.2f per round; time: draft %.0f%%, verify %.0f%%", 100*s.Acceptance, s.Drafted, s.MeanAccepted,
		100*s.DraftMS/max(total, 1e-9), 100*s.VerifyMS/max(total, 1e-9))
}

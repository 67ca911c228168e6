package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/model"
	"stepthrough/engine/sample"
	"stepthrough/engine/speculative"
)

// SpecBench is bench --draft's result: the same greedy generation with
// and without the draft, side by side, and the cost of the verify batch.
type SpecBench struct {
	Model, Draft   string
	K, Tokens      int
	PlainTPS       float64 `json:"plain_tps"`
	SpecTPS        float64 `json:"spec_tps"`
	Speedup        float64 `json:"speedup"`
	Acceptance     float64 `json:"acceptance"`
	MeanAccepted   float64 `json:"mean_accepted"`
	DraftShare     float64 `json:"draft_share"`       // of the speculative run's time
	VerifyShare    float64 `json:"verify_share"`      // of the speculative run's time
	DecodeMS       float64 `json:"decode_ms"`         // one target decode step
	VerifyMS       float64 `json:"verify_ms"`         // one target pass over k+1 positions
	VerifyPerPosMS float64 `json:"verify_per_pos_ms"` // VerifyMS / (k+1)
}

// benchSpeculative measures greedy generation of n tokens after a prompt
// of p random tokens, plain and with the draft (reps runs each, after a
// warm-up, alternating), and the verify pass against a decode step.
func benchSpeculative(ctx context.Context, env Env, target *model.Model, draftPath string, k, p, n, reps int, eo engine.Options, asJSON bool) error {
	dm, err := speculative.LoadDraft(target, draftPath)
	if err != nil {
		return err
	}
	defer dm.Close()
	eo.Context = min(p+n+k+1, target.Config.ContextLen, dm.Config.ContextLen)
	if p+n+k+1 > eo.Context {
		return usageError{fmt.Errorf("-p %d and -n %d with k %d exceed a context of %d", p, n, k, eo.Context)}
	}
	tl, err := engine.Load(target, eo)
	if err != nil {
		return err
	}
	defer tl.Close()
	dl, err := engine.Load(dm, eo)
	if err != nil {
		return err
	}
	defer dl.Close()
	rng := rand.New(rand.NewPCG(42, 42))
	prompt := make([]int32, max(p, 1))
	for i := range prompt {
		prompt[i] = int32(rng.IntN(target.Config.Vocab))
	}
	greedy := sample.Defaults()
	greedy.Temperature, greedy.SeedSet = 0, true
	plain := func() (time.Duration, error) {
		s, err := tl.NewSession(0)
		if err != nil {
			return 0, err
		}
		defer s.Close()
		if _, err := s.Eval(ctx, prompt[:len(prompt)-1]); err != nil {
			return 0, err
		}
		// n greedy tokens, past any end-of-generation token, as the
		// speculative loop below generates them
		start := time.Now()
		logits, err := s.Eval(ctx, prompt[len(prompt)-1:])
		if err != nil {
			return 0, err
		}
		_, err = s.Continue(ctx, logits, engine.Gen{Limits: engine.Limits{MaxTokens: n, IgnoreEOS: true}, Choose: engine.Argmax})
		return time.Since(start), err
	}
	var st speculative.Stats
	spec := func() (time.Duration, error) {
		ts, err := tl.NewSession(0)
		if err != nil {
			return 0, err
		}
		defer ts.Close()
		ds, err := dl.NewSession(0)
		if err != nil {
			return 0, err
		}
		defer ds.Close()
		d, err := speculative.New(ts, ds, greedy, greedy, speculative.Options{K: k})
		if err != nil {
			return 0, err
		}
		if err := d.Start(ctx, prompt); err != nil {
			return 0, err
		}
		start := time.Now()
		for got := 0; got < n; {
			toks, err := d.Step(ctx)
			if err != nil {
				return 0, err
			}
			got += len(toks)
		}
		el := time.Since(start)
		s := d.Stats()
		st.Rounds, st.Drafted, st.Accepted, st.Emitted = st.Rounds+s.Rounds, st.Drafted+s.Drafted, st.Accepted+s.Accepted, st.Emitted+s.Emitted
		st.Draft, st.Verify = st.Draft+s.Draft, st.Verify+s.Verify
		return el, nil
	}
	var tPlain, tSpec time.Duration
	for i := 0; i <= reps; i++ { // the first of each is a warm-up
		a, err := plain()
		if err != nil {
			return err
		}
		if i == 1 {
			st = speculative.Stats{} // count the measured runs only
		}
		b, err := spec()
		if err != nil {
			return err
		}
		if i > 0 {
			tPlain, tSpec = tPlain+a, tSpec+b
		}
	}
	decode, verify, err := verifyCost(ctx, tl, prompt, k, reps)
	if err != nil {
		return err
	}
	res := SpecBench{Model: filepath.Base(target.Path), Draft: filepath.Base(draftPath), K: k, Tokens: n,
		PlainTPS: float64(n*reps) / tPlain.Seconds(), SpecTPS: float64(st.Emitted) / tSpec.Seconds(),
		Acceptance: st.AcceptanceRate(), MeanAccepted: st.MeanAccepted(),
		DraftShare: st.Draft.Seconds() / tSpec.Seconds(), VerifyShare: st.Verify.Seconds() / tSpec.Seconds(),
		DecodeMS: ms(decode), VerifyMS: ms(verify), VerifyPerPosMS: ms(verify) / float64(k+1)}
	res.Speedup = res.SpecTPS / res.PlainTPS
	if asJSON {
		return json.NewEncoder(env.Stdout).Encode(res)
	}
	fmt.Fprintf(env.Stdout, "target %s, draft %s, k %d, %d tokens after %d, greedy, %d runs each (alternating, after a warm-up)\n", res.Model, res.Draft, k, n, p, reps)
	fmt.Fprintf(env.Stdout, "plain        %8.1f t/s\n", res.PlainTPS)
	fmt.Fprintf(env.Stdout, "speculative  %8.1f t/s  (%.2f×)  acceptance %.1f%%, %.2f kept per round; time: draft %.0f%%, verify %.0f%%\n",
		res.SpecTPS, res.Speedup, 100*res.Acceptance, res.MeanAccepted, 100*res.DraftShare, 100*res.VerifyShare)
	fmt.Fprintf(env.Stdout, "verify pass  %.3f ms for %d positions (%.3f ms each) vs a decode step %.3f ms: %.2f of a decode step per position\n",
		res.VerifyMS, k+1, res.VerifyPerPosMS, res.DecodeMS, res.VerifyPerPosMS/res.DecodeMS)
	return nil
}

// verifyCost times one decode step and one pass over k+1 positions at the
// same place in the context (each rolled back after), median of reps×4.
func verifyCost(ctx context.Context, l *engine.Loaded, prompt []int32, k, reps int) (decode, verify time.Duration, err error) {
	s, err := l.NewSession(0)
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	if _, err := s.Eval(ctx, prompt); err != nil {
		return 0, 0, err
	}
	batch := make([]int32, k+1)
	var ds, vs []time.Duration
	for range 4 * reps {
		start := time.Now()
		if _, err := s.Eval(ctx, batch[:1]); err != nil {
			return 0, 0, err
		}
		ds = append(ds, time.Since(start))
		s.Truncate(len(prompt))
		start = time.Now()
		if _, err := s.EvalAll(ctx, batch); err != nil {
			return 0, 0, err
		}
		vs = append(vs, time.Since(start))
		s.Truncate(len(prompt))
	}
	return median(ds), median(vs), nil
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

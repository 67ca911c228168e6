package verify

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"stepthrough/engine"
	"stepthrough/engine/kv"
	"stepthrough/engine/memcalc"
	"stepthrough/engine/quant"
	"stepthrough/engine/sample"
	"stepthrough/engine/serve"
	"stepthrough/engine/stop"
	"stepthrough/lessons"
)

// Claims about serving: a run batched with others, a stop string, the KV
// cache's bytes, the cost of tokens.

// finish decodes the run to its end (its max tokens or end of generation).
func (s *checker) finish(ctx context.Context) error { return s.advance(ctx, nil) }

// serving starts a scheduler on lm for a check, for at most a minute;
// stop ends it.
func serving(ctx context.Context, lm *engine.Loaded, o serve.Options) (sch *serve.Scheduler, stop func(), err error) {
	if sch, err = serve.New(lm, o); err != nil {
		return nil, nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	go sch.Run(rctx)
	return sch, cancel, nil
}

// sampling is the run's sampler settings with its seed as drawn.
func (s *checker) sampling() sample.Params {
	p := s.Run.Sampler
	p.Seed, p.SeedSet = s.Seed, true
	return p
}

// checkBatched serves the step's run through the scheduler in one batch
// with other requests and compares its tokens with the Explorer's.
func (s *checker) checkBatched(ctx context.Context, c lessons.Claim) (string, error) {
	if s.Run.Tools != "" || s.Run.Draft != "" {
		return "", fmt.Errorf("a batched claim needs a plain run (no tools, no draft)")
	}
	if err := s.finish(ctx); err != nil {
		return "", err
	}
	alone := slices.Clone(s.Gen)
	lm, err := s.se.Engines().Engine(s.Run.Model, s.Run.Backend)
	if err != nil {
		return "", err
	}
	n := int(c.Value)
	sch, stop, err := serving(ctx, lm, serve.Options{MaxSeqs: n, ChunkedPrefill: true})
	if err != nil {
		return "", err
	}
	defer stop()
	p := s.sampling()
	others := serve.Load{PromptTokens: 24}
	var ours *serve.Handle
	for i := range n - 1 {
		if i == (n-1)/2 { // ours in the middle of the batch
			if ours, err = sch.Submit(serve.Request{Prompt: s.Prompt, MaxTokens: len(alone), Sampling: p}); err != nil {
				return "", err
			}
		}
		q := p
		q.Seed += uint64(i) + 1
		if _, err := sch.Submit(serve.Request{Prompt: others.Prompt(lm, i), MaxTokens: len(alone) + 8, Sampling: q, IgnoreEOS: true}); err != nil {
			return "", err
		}
	}
	var got []int32
	for ev := range ours.Events {
		if ev.Done && ev.Err != nil {
			return "", ev.Err
		}
		if !ev.Done && ev.Token >= 0 {
			got = append(got, ev.Token)
		}
	}
	text := s.textOf(got)
	return text, want(slices.Equal(got, alone), "batched with %d others it writes %q; alone %q", n-1, text, s.textOf(alone))
}

func (s *checker) textOf(ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(s.Model.Tokenizer.Display(id))
	}
	return b.String()
}

// checkStop finds the stop string in the run's text, counts the tokens it
// spans and checks that the stop matcher, fed the run token by token,
// releases exactly the text before it.
func (s *checker) checkStop(ctx context.Context, c lessons.Claim) (string, error) {
	if err := s.finish(ctx); err != nil {
		return "", err
	}
	tk := s.Model.Tokenizer
	var full []byte
	var ends []int // where each token's bytes end
	for _, id := range s.Gen {
		full = append(full, tk.Bytes(id)...)
		ends = append(ends, len(full))
	}
	at := strings.Index(string(full), c.Text)
	if at < 0 {
		return string(full), fmt.Errorf("the run's text %q does not contain %q", full, c.Text)
	}
	first, last := -1, -1
	for i, e := range ends {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		if start < at+len(c.Text) && e > at {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	spans := last - first + 1
	st := stop.New([]string{c.Text})
	var released strings.Builder
	stopped := false
	for _, id := range s.Gen {
		t, done := st.Push(tk.Bytes(id))
		released.WriteString(t)
		if done {
			stopped = true
			break
		}
	}
	if !stopped || released.String() != string(full[:at]) {
		return released.String(), fmt.Errorf("the stop matcher released %q (stopped: %v), want %q", released.String(), stopped, full[:at])
	}
	return fmt.Sprintf("spans %d tokens; the reply is %q", spans, released.String()), want(spans == int(c.Value), "%q spans %d tokens of the run", c.Text, spans)
}

// checkKVBytes checks the KV cache's bytes per token: the step's model's
// (F32 in this engine), or a preset's at 2 bytes a value.
func (s *checker) checkKVBytes(c lessons.Claim) (string, error) {
	got := float64(s.Model.KVBytesPerToken())
	if c.Text != "" {
		shape, ok := memcalc.Preset(c.Text)
		if !ok {
			return "", fmt.Errorf("no preset named %q", c.Text)
		}
		got = memcalc.Find(memcalc.Calculate(shape, memcalc.Inputs{Weights: quant.F16, KVBytes: 2, Context: 1, Batch: 1}), "KV cache per token").Value
	}
	return fmt.Sprintf("%g bytes", got), want(got == c.Value, "%g bytes of KV cache per token", got)
}

// checkCost checks the calculator's cost of a million tokens.
func checkCost(c lessons.Claim) (string, error) {
	shape, _ := memcalc.Preset("Llama 2 7B") // the cost does not depend on the shape
	got := memcalc.Find(memcalc.Calculate(shape, memcalc.Inputs{Weights: quant.F16, KVBytes: 2, Context: 1, Batch: 1, PricePerHour: c.Price, TokensPerSec: c.Rate}), "cost per million tokens").Value
	return fmt.Sprintf("%.4f", got), want(math.Round(got*100) == math.Round(c.Value*100), "a million tokens cost %.4f", got)
}

// checkBlocks serves the step's run alone through a paged scheduler and
// counts the blocks it held at its fullest.
func (s *checker) checkBlocks(ctx context.Context, c lessons.Claim) (string, error) {
	if s.Run.Tools != "" || s.Run.Draft != "" {
		return "", fmt.Errorf("a blocks claim needs a plain run (no tools, no draft)")
	}
	if err := s.finish(ctx); err != nil {
		return "", err
	}
	lm, err := s.se.Engines().Engine(s.Run.Model, "cpu") // the paged cache is the CPU's
	if err != nil {
		return "", err
	}
	sch, stop, err := serving(ctx, lm, serve.Options{MaxSeqs: 1, Paged: true, BlockSize: c.Block, ChunkedPrefill: true})
	if err != nil {
		return "", err
	}
	defer stop()
	h, err := sch.Submit(serve.Request{Prompt: s.Prompt, MaxTokens: len(s.Gen), Sampling: s.sampling()})
	if err != nil {
		return "", err
	}
	for range h.Events {
	}
	most := 0
	for _, st := range sch.Steps() {
		most = max(most, st.KVHeld/c.Block)
	}
	return fmt.Sprint(most), want(most == int(c.Value), "%d prompt and %d generated tokens held %d blocks of %d positions", len(s.Prompt), len(s.Gen), most, c.Block)
}

// checkShares prefills the step's prompt in a paged cache, then starts a
// second request with the same prompt and more, and counts the blocks it
// shares.
func (s *checker) checkShares(ctx context.Context, c lessons.Claim) (string, error) {
	n, _, err := s.secondRequest(ctx, c.Block, false)
	if err != nil {
		return "", err
	}
	return fmt.Sprint(n / c.Block), want(n/c.Block == int(c.Value), "a second request shares %d blocks (%d positions) of the %d-token prompt", n/c.Block, n, len(s.Prompt))
}

// checkCached prefills the step's prompt in a paged cache that keeps
// ended requests' blocks, ends that request, then starts a second one
// with the same prompt and more, and counts the blocks it reads back.
func (s *checker) checkCached(ctx context.Context, c lessons.Claim) (string, error) {
	n, revived, err := s.secondRequest(ctx, c.Block, true)
	if err != nil {
		return "", err
	}
	return fmt.Sprint(revived), want(revived == int(c.Value) && n == revived*c.Block,
		"after the first request ended, a second reads %d blocks of the %d-token prompt from the prefix cache", revived, len(s.Prompt))
}

// secondRequest runs the step's prompt as a first request in a paged
// pool of blocks of block positions, ending it first when retain is set
// (the pool keeps its blocks), then starts a second request with the same
// prompt and more: the positions it shares, and how many blocks it took
// back from ended requests.
func (s *checker) secondRequest(ctx context.Context, block int, retain bool) (shared, revived int, err error) {
	lm, err := s.se.Engines().Engine(s.Run.Model, "cpu")
	if err != nil {
		return 0, 0, err
	}
	pool, err := lm.NewKVPool(block, lm.Context()/block*2+2)
	if err != nil {
		return 0, 0, err
	}
	pool.Retain = retain
	first, err := lm.NewPagedSession(pool, 0)
	if err != nil {
		return 0, 0, err
	}
	defer first.Close()
	if _, err := first.Eval(ctx, s.Prompt); err != nil {
		return 0, 0, err
	}
	first.RegisterPrefix()
	if retain {
		first.Close()
	}
	second, err := lm.NewPagedSession(pool, 0)
	if err != nil {
		return 0, 0, err
	}
	defer second.Close()
	more := append(slices.Clone(s.Prompt), s.Model.Tokenizer.EncodeIDs(" And then", false)...)
	n, err := second.SharePrefix(kv.Hash{}, more) // both in the default scope
	return n, pool.Stats().Revived, err
}

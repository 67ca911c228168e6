package serve

import (
	"context"
	"slices"
	"testing"

	"stepthrough/engine/sample"
)

// With a paged KV cache, even one so small that requests are preempted
// and read their prompt and reply again, every request gets exactly its
// tokens alone; the pool is whole again at the end.
func TestPagedRequestsGetTheirOwnTokens(t *testing.T) {
	l := load(t)
	tok := l.Model.Tokenizer
	seeded := sample.Defaults()
	seeded.Temperature, seeded.Seed, seeded.SeedSet = 0.8, 3, true
	for _, opt := range []Options{
		{Paged: true, BlockSize: 4, MaxSeqs: 6, TokenBudget: 32, ChunkedPrefill: true, KVPositions: 96}, // tight: preempts
		{Paged: true, BlockSize: 16, MaxSeqs: 6, ChunkedPrefill: true},
		{Paged: true, BlockSize: 8, MaxSeqs: 3, KVPositions: 400},
	} {
		var reqs []Request
		var want [][]int32
		for i, p := range prompts {
			params := greedy()
			if i%3 == 2 {
				params = seeded
			}
			ids := tok.EncodeIDs(p, true)
			n := 20 + 4*i
			want = append(want, alone(t, l, ids, n, params))
			reqs = append(reqs, Request{Prompt: ids, MaxTokens: n, Sampling: params})
		}
		s := start(t, l, opt)
		var hs []*Handle
		for _, r := range reqs {
			h, err := s.Submit(r)
			if err != nil {
				t.Fatal(err)
			}
			hs = append(hs, h)
		}
		for i, h := range hs {
			if got, _, _ := collect(t, h); !slices.Equal(got, want[i]) {
				t.Errorf("block size %d, request %d: %v, alone %v", opt.BlockSize, i, got, want[i])
			}
		}
		preempted := 0
		for _, st := range s.Steps() {
			preempted += len(st.Preempted)
			if st.KVHeld > s.Options().KVPositions {
				t.Errorf("step %d holds %d positions of %d", st.Index, st.KVHeld, s.Options().KVPositions)
			}
		}
		if opt.KVPositions == 96 && preempted == 0 {
			t.Error("a pool of 96 positions for six requests of up to 55 never preempted")
		}
		if s.pool.Free() != s.pool.Blocks {
			t.Errorf("block size %d: %d blocks still held", opt.BlockSize, s.pool.Blocks-s.pool.Free())
		}
		checkSteps(t, s, opt)
	}
}

// Requests that start with the same prompt share its full blocks: the
// ones admitted while the first is running read only the rest.
func TestPagedPrefixSharing(t *testing.T) {
	l := load(t)
	tok := l.Model.Tokenizer
	s := start(t, l, Options{Paged: true, BlockSize: 4, MaxSeqs: 4, ChunkedPrefill: true})
	system := tok.EncodeIDs("Once upon a time, there was a little girl named Lily. She loved to play", true)
	prompt := append(slices.Clone(system), tok.EncodeIDs(" outside", false)...)
	want := alone(t, l, prompt, 5, greedy())
	first, _ := s.Submit(Request{Prompt: system, MaxTokens: 220, Sampling: greedy(), IgnoreEOS: true})
	for len(s.Steps()) == 0 { // the first request's prompt is in its blocks
	}
	second, _ := s.Submit(Request{Prompt: prompt, MaxTokens: 5, Sampling: greedy()})
	got, _, _ := collect(t, second)
	first.Cancel()
	collect(t, first)
	if !slices.Equal(got, want) {
		t.Errorf("after sharing: %v, alone %v", got, want)
	}
	read := 0
	for _, st := range s.Steps() {
		for _, p := range st.Parts {
			if p.Req == second.ID && p.Prefill {
				read += p.Tokens
			}
		}
	}
	full := len(system) / 4 * 4 // the first request's full blocks when the second arrived
	if want := len(system) + len(tok.EncodeIDs(" outside", false)) - full; read != want {
		t.Errorf("the second request read %d prompt tokens, want %d (%d shared)", read, want, full)
	}
}

// A measured sweep has a point per length, each a real duration.
func TestMeasureSweep(t *testing.T) {
	l := load(t)
	sw, err := MeasureSweep(context.Background(), l, []int{8, 16, 32}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(sw.Points) != 3 || sw.Points[2].Tokens != 32 {
		t.Fatalf("sweep %+v", sw)
	}
	for _, p := range sw.Points {
		if p.Prefill <= 0 {
			t.Errorf("point %+v", p)
		}
	}
	if _, err := MeasureSweep(context.Background(), l, []int{8}, 1); err == nil {
		t.Error("one length accepted")
	}
}

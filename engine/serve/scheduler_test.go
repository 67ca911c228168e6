package serve

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"stepthrough/engine"
	"stepthrough/engine/gguf"
	"stepthrough/engine/model"
	"stepthrough/engine/quantize"
	"stepthrough/engine/reftest"
	"stepthrough/engine/sample"
)

func load(t *testing.T) *engine.Loaded {
	t.Helper()
	m, err := model.Load(reftest.Path(t, "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return loadModel(t, m)
}

// loadQuantized is the reference model converted to target in memory
// (Q4_K_M: at its row lengths of 64 and 172 mostly Q5_0 and F16).
func loadQuantized(t *testing.T, target string) *engine.Loaded {
	t.Helper()
	f, err := gguf.Open(reftest.Path(t, "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, _, _, err := quantize.InMemory(f, target)
	if err != nil {
		t.Fatal(err)
	}
	return loadModel(t, m)
}

func loadModel(t *testing.T, m *model.Model) *engine.Loaded {
	t.Helper()
	l, err := engine.Load(m, engine.Options{Threads: 2, Backend: "cpu", Context: 256})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

func greedy() sample.Params {
	p := sample.Defaults()
	p.Temperature, p.SeedSet = 0, true
	return p
}

// alone is a request's tokens run by itself.
func alone(t *testing.T, l *engine.Loaded, prompt []int32, n int, p sample.Params) []int32 {
	t.Helper()
	s, err := l.NewSession(0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	smp, err := sample.New(p)
	if err != nil {
		t.Fatal(err)
	}
	var out []int32
	if err := s.Generate(context.Background(), prompt, n, smp, func(id int32) error { out = append(out, id); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func start(t *testing.T, l *engine.Loaded, opt Options) *Scheduler {
	t.Helper()
	s, err := New(l, opt)
	if err != nil {
		t.Fatal(err)
	}
	run(t, s)
	return s
}

// run steps s until the test ends.
func run(t *testing.T, s *Scheduler) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// collect reads a request's stream to its end.
func collect(t *testing.T, h *Handle) (ids []int32, text string, finish string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-h.Events:
			if !ok {
				t.Fatalf("request %d: stream closed without a Done event", h.ID)
			}
			if ev.Done {
				if ev.Err != nil {
					t.Errorf("request %d: %v", h.ID, ev.Err)
				}
				return ids, text, ev.Finish
			}
			if ev.Token >= 0 {
				ids = append(ids, ev.Token)
			}
			text += ev.Text
		case <-timeout:
			t.Fatalf("request %d: no end after 30 s", h.ID)
		}
	}
}

var prompts = []string{"Once upon a time", "The little dog", "Lily and Ben went to the park. They", "Tom", "One day, a big red ball rolled down the hill and", "She"}

// Under every policy, with and without chunked prefill, and with samplers
// that draw at random, each request gets exactly the tokens it gets
// alone: a batch changes when work is done, never what is computed. The
// same holds for the model quantized as people download them (Q4_K_M),
// whose products take the int8 kernels.
func TestRequestsGetTheirOwnTokens(t *testing.T) {
	t.Run("f32", func(t *testing.T) { requestsGetTheirOwnTokens(t, load(t)) })
	t.Run("q4_k_m", func(t *testing.T) { requestsGetTheirOwnTokens(t, loadQuantized(t, "Q4_K_M")) })
}

func requestsGetTheirOwnTokens(t *testing.T, l *engine.Loaded) {
	tok := l.Model.Tokenizer
	seeded := sample.Defaults()
	seeded.Temperature, seeded.Seed, seeded.SeedSet = 0.9, 7, true
	for _, opt := range []Options{
		{Policy: Continuous, MaxSeqs: 4, TokenBudget: 16, ChunkedPrefill: true},
		{Policy: Continuous, MaxSeqs: 3, TokenBudget: 64},
		{Policy: Static, MaxSeqs: 4, TokenBudget: 64, ChunkedPrefill: true},
		{Policy: Continuous, MaxSeqs: 8, TokenBudget: 8, ChunkedPrefill: true, KVPositions: 120},
	} {
		t.Run(fmt.Sprintf("%s/max%d/budget%d/chunked=%v", opt.Policy, opt.MaxSeqs, opt.TokenBudget, opt.ChunkedPrefill), func(t *testing.T) {
			var reqs []Request
			var want [][]int32
			for i, p := range prompts {
				params := greedy()
				if i%2 == 1 {
					params = seeded
				}
				ids := tok.EncodeIDs(p, true)
				n := 12 + 3*i
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
				got, _, finish := collect(t, h)
				if !slices.Equal(got, want[i]) {
					t.Errorf("request %d: %v, alone %v", i, got, want[i])
				}
				if want := FinishLength; tok.IsEOG(got[len(got)-1]) {
					if finish != FinishEOS {
						t.Errorf("request %d ended %q at end of generation", i, finish)
					}
				} else if finish != want {
					t.Errorf("request %d ended %q, want %q", i, finish, want)
				}
			}
			checkSteps(t, s, opt)
		})
	}
}

// checkSteps holds every recorded step to the options: the token budget,
// the sequence limit, the KV reservation, no mixing without chunking, and
// under static batching no request joining a running batch.
func checkSteps(t *testing.T, s *Scheduler, _ Options) {
	t.Helper()
	opt := s.Options()
	steps := s.Steps()
	if len(steps) == 0 {
		t.Fatal("no steps recorded")
	}
	kv := s.Options().KVPositions
	member := map[int]bool{}
	for _, st := range steps {
		if st.Tokens() > opt.TokenBudget || len(st.Parts) > opt.MaxSeqs || st.KVHeld > kv || st.KVUsed > st.KVHeld {
			t.Errorf("step %d breaks the limits: %+v", st.Index, st)
		}
		prefill, decode := false, false
		for _, p := range st.Parts {
			prefill, decode = prefill || p.Prefill, decode || !p.Prefill
		}
		if !opt.ChunkedPrefill && prefill && decode {
			t.Errorf("step %d mixes prompt and decode tokens without chunked prefill", st.Index)
		}
		if opt.Policy == Static {
			if len(member) > 0 {
				for _, p := range st.Parts {
					if !member[p.Req] {
						t.Errorf("step %d: request %d joined a running static batch", st.Index, p.Req)
					}
				}
			} else {
				for _, p := range st.Parts {
					member[p.Req] = true
				}
			}
			for _, p := range st.Parts {
				if p.Last {
					delete(member, p.Req)
				}
			}
		}
	}
}

// Continuous batching lets a later request start while earlier ones run;
// static batching makes it wait for the whole batch. The three are queued
// before the scheduler steps, so a busy machine that stalls the test
// between submissions cannot let the long one run ahead alone.
func TestContinuousVersusStatic(t *testing.T) {
	l := load(t)
	tok := l.Model.Tokenizer
	for _, pol := range []Policy{Continuous, Static} {
		s, err := New(l, Options{Policy: pol, MaxSeqs: 2, ChunkedPrefill: true})
		if err != nil {
			t.Fatal(err)
		}
		long, _ := s.Submit(Request{Prompt: tok.EncodeIDs("Once upon a time", true), MaxTokens: 60, Sampling: greedy(), Stop: []string{"\x00never"}})
		short, _ := s.Submit(Request{Prompt: tok.EncodeIDs("Tom", true), MaxTokens: 2, Sampling: greedy()})
		late, _ := s.Submit(Request{Prompt: tok.EncodeIDs("She", true), MaxTokens: 2, Sampling: greedy()})
		run(t, s)
		collect(t, short)
		collect(t, late)
		collect(t, long)
		ended := map[int]int{} // request → the step it finished at
		for _, st := range s.Steps() {
			for _, p := range st.Parts {
				if p.Last {
					ended[p.Req] = st.Index
				}
			}
		}
		if pol == Continuous && ended[late.ID] >= ended[long.ID] {
			t.Errorf("continuous: the late request finished at step %d, the long one at %d", ended[late.ID], ended[long.ID])
		}
		if pol == Static && ended[late.ID] <= ended[long.ID] {
			t.Errorf("static: the late request finished at step %d, before the batch ahead of it (step %d)", ended[late.ID], ended[long.ID])
		}
		for _, st := range s.Steps() {
			for _, p := range st.Parts {
				if pol == Static && p.Req == late.ID && st.Running+st.Waiting > 0 {
					// it may only run once the first batch (long, short) has ended
					for _, q := range st.Parts {
						if q.Req == long.ID {
							t.Fatalf("static: step %d runs the late request beside the first batch", st.Index)
						}
					}
				}
			}
		}
	}
}

// A stop string that the model writes across several tokens ends the reply
// just before it, and none of it is streamed.
func TestStopStringAcrossTokens(t *testing.T) {
	l := load(t)
	tok := l.Model.Tokenizer
	prompt := tok.EncodeIDs("Once upon a time", true)
	ids := alone(t, l, prompt, 40, greedy())
	var pieces []string
	for _, id := range ids {
		pieces = append(pieces, string(tok.Bytes(id)))
	}
	full := strings.Join(pieces, "")
	// a stop string that starts inside one token and ends inside a later one
	at := len(pieces[0]) + len(pieces[1]) + len(pieces[2]) - 2
	stop := full[at : at+len(pieces[3])+3]
	if strings.Index(full, stop) != at {
		t.Fatalf("stop %q occurs earlier in %q", stop, full)
	}
	s := start(t, l, Options{ChunkedPrefill: true})
	h, err := s.Submit(Request{Prompt: prompt, MaxTokens: 40, Sampling: greedy(), Stop: []string{stop}})
	if err != nil {
		t.Fatal(err)
	}
	_, text, finish := collect(t, h)
	if finish != FinishStop || text != full[:at] {
		t.Errorf("stop %q: %q, %s; want %q, stop", stop, text, finish, full[:at])
	}
}

// Wrong requests are refused at once; a cancelled one ends cancelled; a
// request too big for the KV cache waits until others free it.
func TestSubmitErrorsCancelAndKVAdmission(t *testing.T) {
	l := load(t)
	tok := l.Model.Tokenizer
	if _, err := New(l, Options{Policy: "fastest"}); err == nil {
		t.Error("unknown policy accepted")
	}
	if _, err := New(l, Options{MaxSeqs: 8, TokenBudget: 4}); err == nil {
		t.Error("a budget smaller than the sequences accepted")
	}
	s := start(t, l, Options{MaxSeqs: 4, KVPositions: 64, ChunkedPrefill: true})
	p := tok.EncodeIDs("Once upon a time", true)
	for name, r := range map[string]Request{
		"empty prompt":   {MaxTokens: 4},
		"no tokens":      {Prompt: p},
		"over the cache": {Prompt: p, MaxTokens: 70},
		"bad sampling":   {Prompt: p, MaxTokens: 4, Sampling: sample.Params{Temperature: -1, TopK: -5}},
	} {
		if _, err := s.Submit(r); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	a, _ := s.Submit(Request{Prompt: p, MaxTokens: 40, Sampling: greedy()}) // 45 of 64 positions
	b, _ := s.Submit(Request{Prompt: p, MaxTokens: 30, Sampling: greedy()}) // 35: must wait for a
	collect(t, a)
	collect(t, b)
	for _, st := range s.Steps() {
		if len(st.Parts) > 1 {
			t.Fatalf("step %d ran two requests that do not fit in 64 positions together", st.Index)
		}
	}
	c, _ := s.Submit(Request{Prompt: p, MaxTokens: 50, Sampling: greedy()})
	c.Cancel()
	if _, _, finish := collect(t, c); finish != FinishCancelled {
		t.Errorf("cancelled request ended %q", finish)
	}
	if sn := s.Snapshot(); sn.KVHeld != 0 || len(sn.Running) != 0 {
		t.Errorf("after every request ended: %+v", sn)
	}
}

// Summarize's every field, on loads whose numbers are worked out by hand.
func TestSummaryPercentiles(t *testing.T) {
	ms := time.Millisecond
	t0 := time.Unix(0, 0)
	// twenty requests arriving together: the i-th has its first token
	// after i ms and its eleventh 10 ms later (1 ms per output token).
	var twenty []Times
	for i := 1; i <= 20; i++ {
		twenty = append(twenty, Times{Arrived: t0, Admitted: t0, FirstToken: t0.Add(time.Duration(i) * ms), Finished: t0.Add(time.Duration(i)*ms + 10*ms), Generated: 11, PromptTokens: 5})
	}
	for _, tc := range []struct {
		name  string
		times []Times
		steps []Step
		want  Summary
	}{
		{
			name:  "twenty requests",
			times: twenty,
			steps: []Step{{Dur: 3 * ms, Parts: []Part{{Prefill: true}, {}}}, {Dur: ms, Parts: []Part{{}}}},
			want: Summary{
				Requests: 20, PromptTokens: 100, Generated: 220,
				Wall:            30 * ms, // the last finish, 20 + 10 ms after the arrivals
				TokensPerSecond: 220 / 0.030,
				TTFT:            Percentiles{P50: 10 * ms, P95: 19 * ms, Max: 20 * ms, Mean: 10500 * time.Microsecond},
				TPOT:            Percentiles{P50: ms, P95: ms, Max: ms, Mean: ms},
				Queued:          Percentiles{}, // admitted on arrival
				Steps:           2,
				PrefillTime:     3 * ms, // a step with any prompt tokens counts as prefill
				DecodeTime:      ms,
				MeanBatch:       1.5,
			},
		},
		{
			name: "one step's peaks",
			times: []Times{
				{Arrived: t0, Admitted: t0.Add(2 * ms), FirstToken: t0.Add(5 * ms), Finished: t0.Add(5 * ms), Generated: 1, PromptTokens: 3},
			},
			steps: []Step{{Dur: 4 * ms, Parts: []Part{{Prefill: true, Last: true}, {Last: true}, {}}, Running: 1, KVUsed: 7, KVHeld: 16, Preempted: []int{4, 5}}},
			want: Summary{
				Requests: 1, PromptTokens: 3, Generated: 1,
				Wall:            5 * ms,
				TokensPerSecond: 1 / 0.005,
				TTFT:            Percentiles{P50: 5 * ms, P95: 5 * ms, Max: 5 * ms, Mean: 5 * ms},
				TPOT:            Percentiles{}, // needs two tokens
				Queued:          Percentiles{P50: 2 * ms, P95: 2 * ms, Max: 2 * ms, Mean: 2 * ms},
				Steps:           1,
				PrefillTime:     4 * ms,
				MeanBatch:       3,
				PeakRunning:     3, // 1 still running and the 2 that finished in the step
				PeakKVUsed:      7,
				PeakKVHeld:      16,
				Preemptions:     2,
			},
		},
		{name: "nothing", want: Summary{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize(tc.times, tc.steps)
			// tokens per second is a float division: equal to the last bits
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(1e-12, 0)); diff != "" {
				t.Errorf("Summarize (-want +got):\n%s", diff)
			}
		})
	}
	if Percentile(nil, 50) != 0 {
		t.Error("empty percentile")
	}
}

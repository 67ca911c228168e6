package cpu

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"stepthrough/engine/kv"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// batchPlan is one sequence's token stream cut into the pieces it adds at
// each step of a batched run (nil: it sits that step out).
type batchPlan [][]int32

// The logits of every sequence in a batched pass equal those of the same
// tokens run alone, whatever shares the pass: prompts cut into chunks
// beside decode steps, sequences joining late and leaving early, GQA, both
// architectures, quantized weights and the tile kernels' edge cases.
func TestForwardBatchEqualsAlone(t *testing.T) {
	models := map[string]*model.Model{
		"stories260K":   loadStories(t),
		"llama gqa f32": synthModel(t, model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32}),
		"llama q8_0":    synthModel(t, model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, FFN: 96, Vocab: 700, Context: 64, Type: quant.Q8_0, Tied: true}),
		"llama q4_k":    synthModel(t, model.SynthOptions{Arch: "llama", Embd: 256, Layers: 1, Heads: 4, FFN: 256, Vocab: 500, Context: 64, Type: quant.Q4_K}),
		"gpt2 f16":      synthModel(t, model.SynthOptions{Arch: "gpt2", Embd: 64, Layers: 2, Heads: 2, FFN: 96, Vocab: 600, Context: 64, Type: quant.F16}),
		"llama q5_0":    synthModel(t, model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.Q5_0}),
		"qwen3":         synthModel(t, model.SynthOptions{Arch: "qwen3", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 96, Vocab: 600, Context: 64, Type: quant.F32}),
		"gemma2 window caps": synthModel(t, model.SynthOptions{Arch: "gemma2", Embd: 64, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 32, FFN: 128, Vocab: 700, Context: 64,
			Type: quant.Q8_0, Tied: true, Window: 4, AttnSoftcap: 0.05, FinalSoftcap: 0.3}),
		"gemma3 window": synthModel(t, model.SynthOptions{Arch: "gemma3", Embd: 64, Layers: 3, Heads: 2, KVHeads: 1, HeadDim: 32, FFN: 128, Vocab: 700, Context: 64,
			Type: quant.F32, Tied: true, Window: 5, SWAPeriod: 3, RopeBase: 1e6, LocalBase: 100}),
		"phi3 fused": synthModel(t, model.SynthOptions{Arch: "phi3", Embd: 64, Layers: 2, Heads: 4, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32, FusedQKV: true, RopeFactors: true, RopeOrigCtx: 32}),
	}
	for name, m := range models {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(name))))
			tok := func(n int) []int32 {
				ids := make([]int32, n)
				for i := range ids {
					ids[i] = int32(rng.IntN(m.Config.Vocab))
				}
				return ids
			}
			one := func() []int32 { return tok(1) }
			plans := []batchPlan{
				{tok(9), one(), one(), one(), one(), one(), one()},  // a prompt, then decode
				{tok(5), tok(6), one(), one(), one(), nil, nil},     // a prompt in two chunks, leaves early
				{nil, nil, tok(13), one(), one(), one(), one()},     // joins at step 2
				{one(), one(), one(), one(), one(), one(), one()},   // decodes from the start
				{nil, tok(2), one(), nil, one(), one(), one()},      // sits a step out
				{tok(3), one(), one(), one(), one(), one(), tok(4)}, // a last multi-token piece
				{one(), one(), one(), one(), one(), one(), one()},   // more rows for the tiles
			}
			want := make([][][]float32, len(plans)) // per sequence, per step, the piece's rows
			for i, p := range plans {
				want[i] = runAlone(t, m, p)
			}
			l, err := Load(m, Options{Threads: 2, Context: 64})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			pool, err := kv.NewPool(m.Config.Layers, m.Config.KVDim(), 4, 200)
			if err != nil {
				t.Fatal(err)
			}
			for _, paged := range []bool{false, true} {
				runners := make([]*Runner, len(plans))
				for i := range runners {
					if paged {
						runners[i], err = l.NewPagedRunner(pool, 0)
					} else {
						runners[i], err = l.NewRunner(0)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				worst := runBatchPlans(t, l, plans, runners, want)
				// equal up to float32 summation order: a step of 16 rows or
				// more goes through the broadcast GEMM (one running sum per
				// output), fewer through the per-vector kernels (split
				// partial sums); measured worst 1.4e-5 on stories260K
				if worst > 3e-5 {
					t.Errorf("paged=%v: max |batched - alone| = %g, want ≤ 3e-5", paged, worst)
				}
				t.Logf("paged=%v: max |batched - alone| = %g", paged, worst)
				for _, r := range runners {
					r.Close()
				}
			}
			if pool.Free() != pool.Blocks {
				t.Errorf("%d of %d blocks free after every runner closed", pool.Free(), pool.Blocks)
			}
		})
	}
}

// runBatchPlans steps the plans together and returns the largest
// difference from want.
func runBatchPlans(t *testing.T, l *Loaded, plans []batchPlan, runners []*Runner, want [][][]float32) float64 {
	t.Helper()
	var worst float64
	for step := range plans[0] {
		var seqs []Seq
		var who []int
		for i, p := range plans {
			if p[step] != nil {
				seqs = append(seqs, Seq{Runner: runners[i], Tokens: p[step], All: true})
				who = append(who, i)
			}
		}
		out := make([][]float32, len(seqs))
		if err := l.ForwardBatch(context.Background(), seqs, out); err != nil {
			t.Fatal(err)
		}
		for k, i := range who {
			worst = max(worst, maxAbsDiff(out[k], want[i][step]))
		}
	}
	return worst
}

// runAlone runs a plan's pieces through a runner of its own.
func runAlone(t *testing.T, m *model.Model, p batchPlan) [][]float32 {
	t.Helper()
	r, err := NewRunner(m, Options{Threads: 2, Context: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := make([][]float32, len(p))
	for step, piece := range p {
		if piece == nil {
			continue
		}
		if out[step], err = r.Forward(context.Background(), piece, true); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var w float64
	for i := range a {
		w = max(w, math.Abs(float64(a[i])-float64(b[i])))
	}
	return w
}

// The last-token logits of a batch go to each runner's own buffer, and a
// later pass of one runner alone continues from the batch's cache.
func TestForwardBatchLastLogitsAndContinue(t *testing.T) {
	m := loadStories(t)
	l, err := Load(m, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, _ := l.NewRunner(0)
	b, _ := l.NewRunner(0)
	ctx := context.Background()
	pa, pb := []int32{1, 400, 401, 402}, []int32{1, 30}
	out := make([][]float32, 2)
	if err := l.ForwardBatch(ctx, []Seq{{Runner: a, Tokens: pa}, {Runner: b, Tokens: pb}}, out); err != nil {
		t.Fatal(err)
	}
	gotA, gotB := append([]float32(nil), out[0]...), append([]float32(nil), out[1]...)
	if err := l.ForwardBatch(ctx, []Seq{{Runner: a, Tokens: []int32{7}}}, out[:1]); err != nil {
		t.Fatal(err)
	}
	nextA := append([]float32(nil), out[0]...)
	if a.Pos() != 5 || b.Pos() != 2 {
		t.Fatalf("positions %d, %d; want 5, 2", a.Pos(), b.Pos())
	}
	alone, _ := l.NewRunner(0)
	wa, _ := alone.Forward(ctx, pa, false)
	if d := maxAbsDiff(gotA, wa); d > 1e-5 {
		t.Errorf("sequence a's last logits differ by %g", d)
	}
	wn, _ := alone.Forward(ctx, []int32{7}, false)
	if d := maxAbsDiff(nextA, wn); d > 1e-5 {
		t.Errorf("a's next step differs by %g", d)
	}
	alone.Reset()
	wb, _ := alone.Forward(ctx, pb, false)
	if d := maxAbsDiff(gotB, wb); d > 1e-5 {
		t.Errorf("sequence b's last logits differ by %g", d)
	}
}

// Wrong batches are refused whole: nothing is appended to any cache.
func TestForwardBatchErrors(t *testing.T) {
	m := loadStories(t)
	l, err := Load(m, Options{Threads: 2, Context: 8, MaxBatch: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, _ := l.NewRunner(0)
	b, _ := l.NewRunner(0)
	other, _ := NewRunner(m, Options{Threads: 1})
	defer other.Close()
	out := make([][]float32, 2)
	ctx := context.Background()
	cases := map[string][]Seq{
		"same runner twice": {{Runner: a, Tokens: []int32{1}}, {Runner: a, Tokens: []int32{2}}},
		"no tokens":         {{Runner: a, Tokens: []int32{1}}, {Runner: b}},
		"outside vocab":     {{Runner: a, Tokens: []int32{1}}, {Runner: b, Tokens: []int32{int32(m.Config.Vocab)}}},
		"over the pass":     {{Runner: a, Tokens: make([]int32, 4)}, {Runner: b, Tokens: make([]int32, 3)}},
		"another model":     {{Runner: a, Tokens: []int32{1}}, {Runner: other, Tokens: []int32{1}}},
		"nil runner":        {{Runner: a, Tokens: []int32{1}}, {}},
	}
	for name, seqs := range cases {
		if err := l.ForwardBatch(ctx, seqs, out); err == nil {
			t.Errorf("%s: no error", name)
		}
		if a.Pos() != 0 || b.Pos() != 0 {
			t.Fatalf("%s: caches changed (%d, %d)", name, a.Pos(), b.Pos())
		}
	}
	if err := l.ForwardBatch(ctx, []Seq{{Runner: a, Tokens: make([]int32, 6)}}, out[:1]); err != nil {
		t.Fatal(err)
	}
	err = l.ForwardBatch(ctx, []Seq{{Runner: a, Tokens: make([]int32, 3)}, {Runner: b, Tokens: []int32{1}}}, out)
	if !errors.Is(err, kv.ErrContextFull) || a.Pos() != 6 || b.Pos() != 0 {
		t.Errorf("past the context: %v (positions %d, %d)", err, a.Pos(), b.Pos())
	}
}

// A runner that starts from another's registered prefix blocks computes
// the rest of its prompt exactly as it would from scratch.
func TestPagedPrefixSharing(t *testing.T) {
	m := loadStories(t)
	l, err := Load(m, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pool, _ := kv.NewPool(m.Config.Layers, m.Config.KVDim(), 4, 64)
	ctx := context.Background()
	shared := []int32{1, 400, 401, 402, 403, 404, 405, 406, 407, 408}
	a, _ := l.NewPagedRunner(pool, 0)
	if _, err := a.Forward(ctx, shared, false); err != nil {
		t.Fatal(err)
	}
	a.Cache().(*kv.Paged).Register(shared)
	prompt := append(shared[:9:9], 30, 31, 32)
	b, _ := l.NewPagedRunner(pool, 0)
	got := b.Cache().(*kv.Paged).SharePrefix(prompt)
	if got != 8 {
		t.Fatalf("shared %d positions, want 8", got)
	}
	used := pool.Used()
	logits, err := b.Forward(ctx, prompt[got:], true)
	if err != nil {
		t.Fatal(err)
	}
	alone, _ := l.NewRunner(0)
	want, _ := alone.Forward(ctx, prompt, true)
	V := m.Config.Vocab
	// the rest's 4 vectors and the whole prompt's 12 may take different
	// F32 kernels (at AVX2 the GEMM from 8 vectors, the tiles below), so
	// their sums round differently: a few ulps of logits near 10
	if d := maxAbsDiff(logits, want[got*V:]); d > 5e-5 {
		t.Errorf("after a shared prefix the logits differ by %g", d)
	}
	if pool.Used() != used+1 {
		t.Errorf("the rest of the prompt took %d blocks, want 1", pool.Used()-used)
	}
	a.Close()
	b.Close()
	if pool.Free() != pool.Blocks {
		t.Errorf("%d blocks still held", pool.Blocks-pool.Free())
	}
}

package speculative

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"stepthrough/engine"
	"stepthrough/engine/hooks"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/engine/sample"
)

func synth(t testing.TB, o model.SynthOptions) *model.Model {
	t.Helper()
	m, err := model.Random(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func session(t testing.TB, m *model.Model) *engine.Session {
	t.Helper()
	s, err := engine.NewSession(m, engine.Options{Threads: 1, Context: 128})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// target and two drafts sharing its tokenizer: one with unrelated random
// weights (almost always wrong), one the same weights in Q8_0 (almost
// always right).
func models(t testing.TB) (target, wrong, close *model.Model) {
	o := model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128, Vocab: 600, Context: 128, Type: quant.F32, Seed: 1}
	target = synth(t, o)
	w := o
	w.Embd, w.Layers, w.Heads, w.KVHeads, w.FFN, w.Seed = 32, 1, 2, 1, 64, 9
	wrong = synth(t, w)
	c := o
	c.Type = quant.Q8_0
	close = synth(t, c)
	return
}

func greedyParams() sample.Params {
	p := sample.Defaults()
	p.Temperature, p.SeedSet = 0, true
	return p
}

func generate(t *testing.T, target, draft *model.Model, tp, dp sample.Params, opt Options, prompt []int32, n int) ([]int32, Stats) {
	t.Helper()
	d, err := New(session(t, target), session(t, draft), tp, dp, opt)
	if err != nil {
		t.Fatal(err)
	}
	var out []int32
	if err := d.Generate(context.Background(), prompt, n, func(id int32) error { out = append(out, id); return nil }); err != nil {
		t.Fatal(err)
	}
	return out, d.Stats()
}

// Greedy speculative decoding gives the target's own greedy text, token
// for token, for any k and any draft — even one that is always wrong.
func TestGreedyEqualsTarget(t *testing.T) {
	target, wrong, close := models(t)
	prompt := target.Tokenizer.EncodeIDs("once upon a time the little cat", true)
	var want []int32
	if err := session(t, target).Greedy(context.Background(), prompt, 40, func(id int32) error { want = append(want, id); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, draft := range []struct {
		name string
		m    *model.Model
	}{{"wrong", wrong}, {"close", close}} {
		for _, opt := range []Options{{K: 1}, {K: 2}, {K: 4}, {K: 7}, {K: 16}, {K: 2, Adaptive: true, MaxK: 8}} {
			got, st := generate(t, target, draft.m, greedyParams(), greedyParams(), opt, prompt, 40)
			if !slices.Equal(got, want) {
				t.Errorf("%s draft, %+v: %v, want %v", draft.name, opt, got, want)
			}
			if st.Emitted < 40 || st.Accepted > st.Drafted {
				t.Errorf("%s draft, %+v: stats %+v", draft.name, opt, st)
			}
			if opt.K == 4 {
				t.Logf("%s draft, k=4: acceptance %.2f, %.2f kept per round", draft.name, st.AcceptanceRate(), st.MeanAccepted())
			}
		}
	}
}

// With sampling, the tokens are distributed as the target's: the first
// token emitted after a fixed prompt, over many seeds, fits the target's
// distribution (chi-square), although the draft samples from a very
// different one (another temperature and other weights).
func TestSamplingIsLossless(t *testing.T) {
	o := model.SynthOptions{Arch: "llama", Embd: 16, Layers: 1, Heads: 2, FFN: 16, Vocab: 40, Context: 16, Type: quant.F32, Seed: 3, Tiny: true}
	target := synth(t, o)
	o.Seed = 4
	draft := synth(t, o)
	tp := sample.Defaults()
	tp.Temperature, tp.TopK, tp.TopP, tp.MinP, tp.SeedSet = 1.3, 0, 1, 0, true
	dp := tp
	dp.Temperature = 0.6
	prompt := target.Tokenizer.EncodeIDs("fuzz me", true)
	ts, ds := session(t, target), session(t, draft)
	// the target's own distribution of the first token
	logits, err := ts.Eval(context.Background(), prompt)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, o.Vocab)
	smp, _ := sample.New(tp)
	smp.Accept(prompt...)
	smp.Distribution(logits, want)
	const n = 40000
	counts, second := make([]float64, o.Vocab), make([]float64, o.Vocab)
	rejected := 0
	for seed := range uint64(n) {
		ts.Reset()
		ds.Reset()
		tp.Seed, dp.Seed = seed, seed+n
		d, err := New(ts, ds, tp, dp, Options{K: 3})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(context.Background(), prompt); err != nil {
			t.Fatal(err)
		}
		toks, err := d.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		counts[toks[0]]++
		if len(toks) > 1 {
			second[toks[1]]++
		}
		if d.Stats().Accepted < 3 {
			rejected++
		}
	}
	if rejected < n/10 {
		t.Fatalf("only %d of %d rounds rejected a proposal: the test would not see the residual", rejected, n)
	}
	chi, df := chiSquare(counts, want, n)
	if crit := chiCritical(df); chi > crit {
		t.Errorf("first token: chi-square %.1f over %d degrees of freedom (critical %.1f at 0.001): not the target's distribution", chi, df, crit)
	}
	t.Logf("first token over %d seeds: chi-square %.1f, df %d (critical %.1f); %d rounds rejected a proposal", n, chi, df, chiCritical(df), rejected)
}

// chiSquare compares counts with probabilities, pooling bins expected
// below 5.
func chiSquare(counts []float64, p []float32, n float64) (float64, int) {
	var chi, poolObs, poolExp float64
	bins := 0
	for i, c := range counts {
		e := float64(p[i]) * n
		if e < 5 {
			poolObs, poolExp = poolObs+c, poolExp+e
			continue
		}
		chi += (c - e) * (c - e) / e
		bins++
	}
	if poolExp > 0 {
		chi += (poolObs - poolExp) * (poolObs - poolExp) / poolExp
		bins++
	}
	return chi, bins - 1
}

// chiCritical is the chi-square value exceeded with probability 0.001
// (Wilson–Hilferty).
func chiCritical(df int) float64 {
	k := float64(df)
	z := 3.0902 // the normal's 0.999 quantile
	c := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * c * c * c
}

// The same seed gives the same tokens.
func TestSeededReplay(t *testing.T) {
	target, wrong, _ := models(t)
	p := sample.Defaults()
	p.Seed, p.SeedSet = 42, true
	prompt := target.Tokenizer.EncodeIDs("the dog", true)
	a, _ := generate(t, target, wrong, p, p, Options{K: 3}, prompt, 30)
	b, _ := generate(t, target, wrong, p, p, Options{K: 3}, prompt, 30)
	if !slices.Equal(a, b) || len(a) != 30 {
		t.Errorf("seed 42 twice: %v / %v", a, b)
	}
}

// After rounds with rejections the target's cache holds exactly the
// committed tokens: its next logits equal those of a fresh session fed the
// same tokens.
func TestRollback(t *testing.T) {
	target, wrong, _ := models(t)
	p := sample.Defaults()
	p.Seed, p.SeedSet = 7, true
	ts, ds := session(t, target), session(t, wrong)
	d, err := New(ts, ds, p, p, Options{K: 4})
	if err != nil {
		t.Fatal(err)
	}
	prompt := target.Tokenizer.EncodeIDs("the cat saw", true)
	var out []int32
	if err := d.Generate(context.Background(), prompt, 25, func(id int32) error { out = append(out, id); return nil }); err != nil {
		t.Fatal(err)
	}
	if d.Stats().Accepted == d.Stats().Drafted {
		t.Fatal("no proposal was rejected: nothing rolled back")
	}
	committed := append(slices.Clone(prompt), d.committed[len(prompt):]...)
	if ts.Pos() != len(committed)-1 || !slices.Equal(ts.Tokens(), committed[:len(committed)-1]) {
		t.Fatalf("target holds %d tokens, want %d", ts.Pos(), len(committed)-1)
	}
	got, err := ts.Eval(context.Background(), committed[len(committed)-1:])
	if err != nil {
		t.Fatal(err)
	}
	fresh := session(t, target)
	want, _ := fresh.Eval(context.Background(), committed)
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-4 {
			t.Fatalf("logit %d after rollback %g, fresh %g", i, got[i], want[i])
		}
	}
}

func TestRefusals(t *testing.T) {
	target, wrong, _ := models(t)
	other := synth(t, model.SynthOptions{Arch: "gpt2", Embd: 32, Layers: 1, Heads: 2, FFN: 32, Vocab: 600, Context: 128, Type: quant.F32})
	if _, err := New(session(t, target), session(t, other), greedyParams(), greedyParams(), Options{K: 2}); err == nil || !strings.Contains(err.Error(), "tokenizer") {
		t.Errorf("mismatched vocabularies: %v", err)
	}
	for _, k := range []int{0, 17, -1} {
		if _, err := New(session(t, target), session(t, wrong), greedyParams(), greedyParams(), Options{K: k}); err == nil {
			t.Errorf("k %d: want error", k)
		}
	}
}

// Continue takes over from a target that prefilled the prompt and sampled
// the first token itself (the Explorer's way): the output is the same as
// Start's, and hooks see only the target's passes.
func TestContinueAndHooks(t *testing.T) {
	target, _, close := models(t)
	prompt := []int32{1, 5, 9, 200, 31}
	opt := Options{K: 3}
	want, _ := generate(t, target, close, greedyParams(), greedyParams(), opt, prompt, 20)

	ts, ds := session(t, target), session(t, close)
	ctx := context.Background()
	logits, err := ts.Eval(ctx, prompt)
	if err != nil {
		t.Fatal(err)
	}
	first := engine.Argmax(logits)
	d, err := New(ts, ds, greedyParams(), greedyParams(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Continue(ctx, append(slices.Clone(prompt), first)); err != nil {
		t.Fatal(err)
	}
	var embeds, rounds int
	var last hooks.Speculative
	hctx := hooks.WithHooks(ctx, &hooks.Hooks{
		OnEmbed:       func(e hooks.Embed) { embeds++ },
		OnSpeculative: func(e hooks.Speculative) { rounds++; last = e },
	})
	got := []int32{first}
	for len(got) < 20 {
		toks, err := d.Step(hctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, toks...)
	}
	if !slices.Equal(got[:20], want) {
		t.Fatalf("Continue: %v, Start: %v", got[:20], want)
	}
	if embeds != rounds {
		t.Errorf("%d embed events for %d rounds: the draft's passes reached the hooks", embeds, rounds)
	}
	if len(last.QTop) != len(last.Proposed) || len(last.PTop) < last.Accepted+1 {
		t.Errorf("top candidates: %d draft rows, %d target rows for %d proposals, %d accepted", len(last.QTop), len(last.PTop), len(last.Proposed), last.Accepted)
	}
	if err := d.Continue(ctx, prompt); err == nil {
		t.Error("Continue with the target past the committed tokens: no error")
	}
}

func TestTop(t *testing.T) {
	got := top([]float32{0.1, 0, 0.4, 0.2, 0.2, 0.1}, 3)
	want := []int32{2, 3, 4}
	for i, c := range got {
		if c.ID != want[i] {
			t.Fatalf("top 3: %v, want ids %v", got, want)
		}
	}
	if len(got) != 3 {
		t.Fatalf("top 3: %d candidates", len(got))
	}
}

// A FirstLayers draft computes the target's own residual stream after its
// first layers, then the target's final norm and output head: its logits
// are checked against that computed by hand (float64) from the target's
// residual, and greedy self-speculation equals the target's output.
func TestSelfDraft(t *testing.T) {
	target, _, _ := models(t)
	self, err := target.FirstLayers(1)
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int32{1, 5, 9, 200, 31}
	var resid []float32
	ctx := hooks.WithHooks(context.Background(), &hooks.Hooks{OnResidual: func(r hooks.Residual) {
		if r.Layer == 0 && r.After == "mlp" {
			resid = slices.Clone(r.X[(r.N-1)*len(r.X)/r.N:])
		}
	}})
	if _, err := session(t, target).Eval(ctx, prompt); err != nil {
		t.Fatal(err)
	}
	got, err := session(t, self).Eval(context.Background(), prompt)
	if err != nil {
		t.Fatal(err)
	}
	f32 := func(b []byte, i int) float64 {
		return float64(math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24))
	}
	var ss float64
	for _, x := range resid {
		ss += float64(x) * float64(x)
	}
	inv := 1 / math.Sqrt(ss/float64(len(resid))+float64(target.Config.NormEps))
	norm := target.Weights.OutNorm.Row(0)
	out := target.Weights.Output
	if out == nil {
		out = target.Weights.TokEmbd
	}
	for v := range target.Config.Vocab {
		row := out.Row(v)
		var want float64
		for i, x := range resid {
			want += float64(x) * inv * f32(norm, i) * f32(row, i)
		}
		if math.Abs(want-float64(got[v])) > 1e-4*(1+math.Abs(want)) {
			t.Fatalf("logit %d: draft %g, the target's layer-1 residual through its head %g", v, got[v], want)
		}
	}
	want, _ := generate(t, target, target, greedyParams(), greedyParams(), Options{K: 4}, prompt, 24)
	out2, stats := generate(t, target, self, greedyParams(), greedyParams(), Options{K: 4}, prompt, 24)
	if !slices.Equal(out2, want) {
		t.Fatalf("self-speculation: %v, the target: %v", out2, want)
	}
	t.Logf("self draft (1 of 2 layers): acceptance %.0f%%", 100*stats.AcceptanceRate())
	if _, err := target.FirstLayers(2); err == nil {
		t.Error("FirstLayers(all layers): no error")
	}
}

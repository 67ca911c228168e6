//go:build cgo

package vulkan

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"stepthrough/engine/cpu"
	"stepthrough/engine/hooks"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
	"stepthrough/engine/reftest"
	"stepthrough/engine/trace"
)

func synth(t testing.TB, o model.SynthOptions) *model.Model {
	m, err := model.Random(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// parity runs the same prompt on the CPU and Vulkan runners: logits within
// 1e-3 at every position, and the same greedy continuation. For Q4_K,
// Q5_K, Q6_K, Q4_0, Q5_0 and Q8_0 weights both multiply x rounded to 8 bits (as
// llama.cpp's CPU backend does; round_x.comp on the GPU), which mostly
// agrees as closely as floats do (2.4e-7 on the stories15M shape in Q8_0,
// where multiplying unrounded x on the GPU gave 0.027); but the two
// backends' inputs agree only to float rounding (summation orders
// differ), and a value that close to a rounding boundary rounds to
// neighbouring integers on the two, moving the logits by up to a few
// hundredths. Those types are held to llama.cpp's test-backend-ops bound
// for quantized products, NMSE ≤ 5e-4 (1e-3 for gemma).
func roundsX(t quant.Type) bool { return xBlock(t, 256) > 0 }

func parity(t *testing.T, d *Device, m *model.Model, prompt []int32, greedy int) {
	t.Helper()
	nmse := 0.0
	if roundsX(m.Weights.Layers[0].Up.Type) {
		nmse = 5e-4
		if m.Config.Arch == "gemma3" || m.Config.Arch == "gemma2" {
			nmse = 1e-3 // its norms after each sub-layer carry a rounding's difference on
		}
	}
	parityWithin(t, d, m, prompt, greedy, 1e-3, nmse)
}

// parityWithin is parity with logits within maxAbs, or, when maxNMSE > 0,
// with an NMSE within maxNMSE instead.
func parityWithin(t *testing.T, d *Device, m *model.Model, prompt []int32, greedy int, maxAbs, maxNMSE float64) {
	t.Helper()
	ctx := context.Background()
	n := min(256, m.Config.ContextLen)
	cr, err := cpu.NewRunner(m, cpu.Options{Threads: 2, Context: n})
	if err != nil {
		t.Fatal(err)
	}
	defer cr.Close()
	vr, err := newRunner(d, m, n)
	if err != nil {
		t.Fatal(err)
	}
	defer vr.Close()
	want, err := cr.Forward(ctx, prompt, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := vr.Forward(ctx, prompt, true)
	if err != nil {
		t.Fatal(err)
	}
	var worst, se, s2 float64
	for i := range want {
		worst = max(worst, math.Abs(float64(want[i]-got[i])))
		se += float64(want[i]-got[i]) * float64(want[i]-got[i])
		s2 += float64(want[i]) * float64(want[i])
	}
	nmse := se / s2
	if maxNMSE > 0 && nmse > maxNMSE {
		t.Errorf("%s: NMSE(cpu, vulkan) of the logits = %g > %g (max |vulkan - cpu| %g)", m.Config.Name, nmse, maxNMSE, worst)
	} else if maxNMSE == 0 && worst > maxAbs {
		t.Errorf("%s: max |vulkan - cpu| logit = %g > %g (NMSE %g)", m.Config.Name, worst, maxAbs, nmse)
	}
	t.Logf("%s: max |vulkan - cpu| logit = %.2g, NMSE %.2g", m.Config.Name, worst, nmse)
	V := m.Config.Vocab
	argmax := func(x []float32) int32 {
		b := 0
		for i, v := range x {
			if v > x[b] {
				b = i
			}
		}
		return int32(b)
	}
	cl, vl := want[(len(prompt)-1)*V:], got[(len(prompt)-1)*V:]
	var cs, vs []int32
	for i := 0; i < greedy; i++ {
		a, b := argmax(cl), argmax(vl)
		cs, vs = append(cs, a), append(vs, b)
		if cl, err = cr.Forward(ctx, []int32{a}, false); err != nil {
			t.Fatal(err)
		}
		if vl, err = vr.Forward(ctx, []int32{b}, false); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(cs, vs) {
		t.Errorf("%s: greedy tokens differ\ncpu    %v\nvulkan %v", m.Config.Name, cs, vs)
	}
}

func TestModelParity(t *testing.T) {
	d := openTest(t, false)
	stories, err := model.Load(reftest.Path(t, "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer stories.Close()
	prompt := stories.Tokenizer.EncodeIDs("Once upon a time", true)
	parity(t, d, stories, prompt, 32)
	// a prompt of 16 tokens or more: its products in tiles (matmul_tiled)
	long := stories.Tokenizer.EncodeIDs("Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends.", true)
	if len(long) < 2*tiledMinVectors {
		t.Fatalf("long prompt of %d tokens: too short for the tiled products", len(long))
	}
	parity(t, d, stories, long, 8)
	shape := model.SynthOptions{Arch: "llama", Embd: 288, Layers: 6, Heads: 6, FFN: 768, Vocab: 32000, Context: 256}
	if testing.Short() {
		shape.Layers, shape.Vocab = 2, 2000
	}
	for _, typ := range []quant.Type{quant.F32, quant.Q8_0} {
		shape.Type, shape.Name = typ, "stories15M-shape "+typ.String()
		m := synth(t, shape)
		parity(t, d, m, m.Tokenizer.EncodeIDs("once upon a time the little cat", true), 8)
	}
	for _, typ := range []quant.Type{quant.F16, quant.Q4_0, quant.BF16} {
		m := synth(t, model.SynthOptions{Arch: "gpt2", Embd: 64, Layers: 2, Heads: 4, FFN: 128, Vocab: 600, Context: 64, Type: typ, Name: "gpt2 " + typ.String()})
		parity(t, d, m, m.Tokenizer.EncodeIDs("the cat saw a big red ball", true), 8)
	}
	m := synth(t, model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.Q8_0, Tied: true, Name: "llama GQA tied"})
	parity(t, d, m, m.Tokenizer.EncodeIDs("once upon a time", true), 8)
	if !testing.Short() {
		// The 110M shape's width (768) and FFN, a prompt of more than 16
		// tokens (the tiled products on both backends), where the roundings
		// that differ (see parity) are a few per prompt, each moving logits
		// of about ±3 by up to 0.03 (measured: max 0.031, NMSE 1.1e-4; F32
		// weights, nothing rounded, 3.8e-6). Random weights leave near ties
		// among the top logits, so the greedy tokens are not compared.
		wide := model.SynthOptions{Arch: "llama", Embd: 768, Layers: 3, Heads: 12, FFN: 2048, Vocab: 4000, Context: 64}
		for _, typ := range []quant.Type{quant.Q8_0, quant.Q6_K} {
			wide.Type, wide.Name = typ, "110M-wide "+typ.String()
			m := synth(t, wide)
			parityWithin(t, d, m, m.Tokenizer.EncodeIDs("once upon a time the little cat saw a big red ball and the dog was happy", true), 0, 0, 5e-4)
		}
	}
	for _, typ := range []quant.Type{quant.Q4_K, quant.Q5_K, quant.Q6_K} { // decoded in the shaders, uploaded as they are
		m := synth(t, model.SynthOptions{Arch: "llama", Embd: 256, Layers: 2, Heads: 4, FFN: 512, Vocab: 600, Context: 64, Type: typ, Name: "llama " + typ.String()})
		parity(t, d, m, m.Tokenizer.EncodeIDs("once upon a time", true), 8)
	}
}

// The staging path (the one a discrete GPU takes) gives the same logits.
func TestModelParityStaging(t *testing.T) {
	d := openTest(t, true)
	m := synth(t, model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32, Name: "staging"})
	parity(t, d, m, m.Tokenizer.EncodeIDs("once upon a time", true), 4)
}

// Hooks on the Vulkan runner report GPU-computed tensors matching the CPU's.
func TestHooksOnVulkan(t *testing.T) {
	d := openTest(t, false)
	m, err := model.Load(reftest.Path(t, "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	type rec struct {
		attn  []hooks.Attention
		mlp   []hooks.MLP
		res   [][]float32
		embed []float32
	}
	collect := func(r *rec) context.Context {
		return hooks.WithHooks(context.Background(), &hooks.Hooks{
			OnEmbed: func(e hooks.Embed) { r.embed = slices.Clone(e.Input) },
			OnAttention: func(a hooks.Attention) {
				a.Weights, a.Scores, a.Q, a.Out = slices.Clone(a.Weights), slices.Clone(a.Scores), slices.Clone(a.Q), slices.Clone(a.Out)
				r.attn = append(r.attn, a)
			},
			OnMLP:      func(p hooks.MLP) { p.Act, p.Gate = slices.Clone(p.Act), slices.Clone(p.Gate); r.mlp = append(r.mlp, p) },
			OnResidual: func(x hooks.Residual) { r.res = append(r.res, slices.Clone(x.X)) },
		})
	}
	var a, b rec
	cr, _ := cpu.NewRunner(m, cpu.Options{Threads: 2, Context: 64})
	defer cr.Close()
	vr, err := newRunner(d, m, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer vr.Close()
	prompt := m.Tokenizer.EncodeIDs("Once upon a time", true)
	cr.Forward(collect(&a), prompt, false)
	vr.Forward(collect(&b), prompt, false)
	if len(a.attn) != 5 || len(b.attn) != 5 || len(b.mlp) != 5 || len(b.res) != 10 {
		t.Fatalf("hook counts: cpu %d/%d, vulkan %d/%d/%d", len(a.attn), len(a.mlp), len(b.attn), len(b.mlp), len(b.res))
	}
	close := func(what string, x, y []float32) {
		t.Helper()
		if len(x) != len(y) {
			t.Fatalf("%s: %d vs %d values", what, len(x), len(y))
		}
		for i := range x {
			if math.IsInf(float64(x[i]), -1) && math.IsInf(float64(y[i]), -1) {
				continue
			}
			if math.Abs(float64(x[i]-y[i])) > 1e-3 {
				t.Fatalf("%s[%d]: cpu %g, vulkan %g", what, i, x[i], y[i])
			}
		}
	}
	close("embed", a.embed, b.embed)
	for l := range a.attn {
		close("weights", a.attn[l].Weights, b.attn[l].Weights)
		close("scores", a.attn[l].Scores, b.attn[l].Scores)
		close("q", a.attn[l].Q, b.attn[l].Q)
		close("attn out", a.attn[l].Out, b.attn[l].Out)
		close("act", a.mlp[l].Act, b.mlp[l].Act)
		close("gate", a.mlp[l].Gate, b.mlp[l].Gate)
	}
	for i := range a.res {
		close("residual", a.res[i], b.res[i])
	}
}

// The trace a Vulkan run records has the same steps and stages as the
// CPU's, and the same shapes in each, for both architectures (the
// recorder's view of the hooks: no phantom step, no missing stage).
func TestTraceParity(t *testing.T) {
	d := openTest(t, false)
	for _, arch := range []string{"llama", "gpt2"} {
		m := synth(t, model.SynthOptions{Arch: arch, Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128, Vocab: 600, Context: 64, Type: quant.F32, Name: arch})
		if arch == "gpt2" {
			m = synth(t, model.SynthOptions{Arch: arch, Embd: 64, Layers: 2, Heads: 4, FFN: 128, Vocab: 600, Context: 64, Type: quant.F32, Name: arch})
		}
		record := func(r interface {
			Forward(context.Context, []int32, bool) ([]float32, error)
		}) []*trace.Step {
			rec := trace.NewRecorder(trace.Options{Attention: true, QKV: true, MLP: true})
			ctx := hooks.WithHooks(context.Background(), rec.Hooks())
			for _, toks := range [][]int32{{1, 5, 9, 4}, {7}, {3}} {
				if _, err := r.Forward(ctx, toks, false); err != nil {
					t.Fatal(err)
				}
			}
			rec.Finish()
			return rec.Steps()
		}
		cr, _ := cpu.NewRunner(m, cpu.Options{Threads: 2, Context: 64})
		vr, err := newRunner(d, m, 64)
		if err != nil {
			t.Fatal(err)
		}
		a, b := record(cr), record(vr)
		cr.Close()
		vr.Close()
		if len(a) != 3 || len(b) != len(a) {
			t.Fatalf("%s: cpu %d steps, vulkan %d", arch, len(a), len(b))
		}
		for i := range a {
			sa, sb := trace.Stages(a[i]), trace.Stages(b[i])
			if !slices.Equal(sa, sb) {
				t.Errorf("%s step %d: cpu stages %v, vulkan %v", arch, i, sa, sb)
			}
			if a[i].Pos0 != b[i].Pos0 || a[i].N != b[i].N || len(a[i].Embed.Input) != len(b[i].Embed.Input) ||
				(a[i].Embed.PosRows == nil) != (b[i].Embed.PosRows == nil) || len(a[i].Logits.Logits) != len(b[i].Logits.Logits) {
				t.Errorf("%s step %d: shapes differ", arch, i)
			}
			for l := range a[i].Layers {
				la, lb := a[i].Layers[l], b[i].Layers[l]
				if len(la.Attention.Weights) != len(lb.Attention.Weights) || len(la.MLP.Act) != len(lb.MLP.Act) || la.KVLen != lb.KVLen ||
					len(la.NewK) != len(lb.NewK) || (la.ResidMLP == nil) != (lb.ResidMLP == nil) {
					t.Errorf("%s step %d layer %d: shapes differ", arch, i, l)
				}
			}
		}
	}
}

// Every family runs on Vulkan with the CPU's numbers: Q/K norms, post
// norms, the scaled embedding, GeGLU, the fused gate-up, sliding windows
// shorter than the prompt with their own RoPE base, soft caps that bite,
// a head size apart from width ÷ heads, scaled RoPE.
func TestFamilyParity(t *testing.T) {
	d := openTest(t, false)
	for _, o := range []model.SynthOptions{
		{Arch: "qwen2", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 600, Context: 64, Type: quant.Q8_0, Tied: true, RopeBase: 1e6},
		{Arch: "qwen3", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 96, Vocab: 600, Context: 64, Type: quant.F32, RopeBase: 1e6},
		{Arch: "gemma2", Embd: 64, Layers: 3, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 700, Context: 64, Type: quant.F16, Tied: true,
			Window: 5, AttnSoftcap: 0.05, FinalSoftcap: 0.2},
		{Arch: "gemma3", Embd: 64, Layers: 4, Heads: 2, KVHeads: 1, HeadDim: 32, FFN: 128, Vocab: 700, Context: 64, Type: quant.Q8_0, Tied: true,
			Window: 6, SWAPeriod: 3, RopeBase: 1e6, LocalBase: 100, FinalSoftcap: 0.2},
		{Arch: "phi3", Embd: 64, Layers: 2, Heads: 4, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32, FusedQKV: true, RopeFactors: true, RopeOrigCtx: 32},
		{Arch: "phi3", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32},
		{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32, RopeScaling: "yarn", RopeFactor: 4, RopeOrigCtx: 16},
		// the optional tensors: every bias (qwen2's on the logits too), Q·K·V fused
		{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32, FusedQKV: true, Biases: true},
		{Arch: "qwen2", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 600, Context: 64, Type: quant.Q8_0, Biases: true, RopeBase: 1e6},
	} {
		o.Name = fmt.Sprintf("%s %s", o.Arch, o.Type)
		if o.Biases {
			o.Name += " biases"
		}
		t.Run(o.Name, func(t *testing.T) {
			m := synth(t, o)
			prompt := m.Tokenizer.EncodeIDs("once upon a time the little cat saw a big red ball and the dog was happy so they went to the park with mom", true)
			if o.Window > 0 && len(prompt) < 3*o.Window {
				t.Fatalf("prompt of %d tokens: too short for the window %d", len(prompt), o.Window)
			}
			parity(t, d, m, prompt, 8)
		})
	}
}

// A model with a feature the passes lack is refused at Load, naming it
// (the engine then runs it on the CPU with this note).
func TestLoadRefusesWhatItLacks(t *testing.T) {
	d := openTest(t, false)
	m := synth(t, model.SynthOptions{Arch: "qwen3", Embd: 32, Layers: 1, Heads: 2, HeadDim: 16, FFN: 64, Vocab: 600, Context: 32, Type: quant.F32})
	delete(supported, "qk-norm")
	defer func() { supported["qk-norm"] = true }()
	if l, err := Load(d, m, 32); err == nil {
		l.Close()
		t.Fatal("loaded a model with a feature the passes lack")
	} else if !strings.Contains(err.Error(), "query and key RMS-normed") {
		t.Errorf("error %v; want it to name the Q/K norm", err)
	}
}

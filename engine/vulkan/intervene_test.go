//go:build cgo

package vulkan

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"stepthrough/engine/cpu"
	"stepthrough/engine/hooks"
	"stepthrough/engine/intervene"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// Every intervention gives the CPU's logits on Vulkan (which the CPU
// tests check against the float64 oracle): heads, units, sublayers and
// the residual stream, zeroed, scaled, replaced and added to, over a
// prompt and then a decode step (the unfused path), and each really
// changes the logits.
func TestInterventionParity(t *testing.T) {
	d := openTest(t, false)
	for _, o := range []model.SynthOptions{
		{Arch: "llama", Embd: 64, Layers: 3, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32},
		{Arch: "gpt2", Embd: 64, Layers: 2, Heads: 4, FFN: 128, Vocab: 600, Context: 64, Type: quant.F32, Tied: true},
		// F16: the CPU rounds x to 8 bits against Q8_0 rows and the shaders
		// do not, which TestFamilyParity bounds; here the edits are compared
		{Arch: "gemma3", Embd: 64, Layers: 3, Heads: 2, KVHeads: 1, HeadDim: 32, FFN: 128, Vocab: 700, Context: 64, Type: quant.F16, Tied: true, Window: 6, SWAPeriod: 3},
	} {
		m := synth(t, o)
		c := m.Config
		rng := rand.New(rand.NewPCG(3, 4))
		vec := func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			return v
		}
		prompt := m.Tokenizer.EncodeIDs("once upon a time the little cat saw a big red ball", true)
		sets := map[string]*intervene.Set{
			"ablated head":      {Edits: []intervene.Edit{{Layer: 1, Site: intervene.Head, Index: 1, Pos: -1, Op: intervene.Zero}}},
			"scaled head":       {Edits: []intervene.Edit{{Layer: 0, Site: intervene.Head, Index: c.Heads - 1, Pos: -1, Op: intervene.Scale, Factor: 2.5}}},
			"mean-ablated head": {Edits: []intervene.Edit{{Layer: 1, Site: intervene.Head, Index: 0, Pos: -1, Op: intervene.Replace, Vector: vec(c.HeadDim)}}},
			"units": {Edits: []intervene.Edit{{Layer: 0, Site: intervene.Unit, Index: 7, Pos: -1, Op: intervene.Zero},
				{Layer: 1, Site: intervene.Unit, Index: 3, Pos: -1, Op: intervene.Scale, Factor: -3}}},
			"mean-ablated unit": {Edits: []intervene.Edit{{Layer: 1, Site: intervene.Unit, Index: 5, Pos: -1, Op: intervene.Replace, Vector: []float32{2.5}}}},
			"sublayers":         {Edits: []intervene.Edit{{Layer: 1, Site: intervene.Attn, Pos: -1, Op: intervene.Zero}, {Layer: 0, Site: intervene.MLP, Pos: -1, Op: intervene.Scale, Factor: 0.5}}},
			"patched residual":  {Edits: []intervene.Edit{{Layer: 0, Site: intervene.Resid, Pos: 3, Op: intervene.Replace, Vector: vec(c.Embd)}}},
			"steered layer":     {Edits: []intervene.Edit{{Layer: 1, Site: intervene.Resid, Pos: -1, Op: intervene.Add, Factor: 4, Vector: vec(c.Embd)}}},
		}
		plain := passes(t, d, m, prompt, nil, true)
		for name, set := range sets {
			t.Run(o.Arch+"/"+name, func(t *testing.T) {
				want := passes(t, d, m, prompt, set, false)
				got := passes(t, d, m, prompt, set, true)
				var worst, moved float64
				for i := range want {
					worst = max(worst, math.Abs(float64(want[i]-got[i])))
					moved = max(moved, math.Abs(float64(got[i]-plain[i])))
				}
				if worst > 1e-3 {
					t.Errorf("max |vulkan - cpu| logit = %g > 1e-3", worst)
				}
				if moved < 1e-3 {
					t.Errorf("the edit moved Vulkan's logits by %g: not applied", moved)
				}
			})
		}
	}
}

// passes runs prompt with every position's logits, then one decode step,
// with set's edits, on Vulkan or the CPU, and returns all the logits.
func passes(t *testing.T, d *Device, m *model.Model, prompt []int32, set *intervene.Set, onVulkan bool) []float32 {
	t.Helper()
	ctx := context.Background()
	fwd := editedRunner(t, d, m, set, onVulkan)
	defer fwd.Close()
	out, err := fwd.Forward(ctx, prompt, true)
	if err != nil {
		t.Fatal(err)
	}
	step, err := fwd.Forward(ctx, []int32{5}, false)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, step...)
}

// editedRunner is a runner on Vulkan or the CPU (64 positions) whose
// passes apply set.
func editedRunner(t *testing.T, d *Device, m *model.Model, set *intervene.Set, onVulkan bool) interface {
	Forward(context.Context, []int32, bool) ([]float32, error)
	Close()
} {
	t.Helper()
	var fwd interface {
		Forward(context.Context, []int32, bool) ([]float32, error)
		SetEdits(*intervene.Set) error
		Close()
	}
	var err error
	if onVulkan {
		fwd, err = newRunner(d, m, 64)
	} else {
		fwd, err = cpu.NewRunner(m, cpu.Options{Threads: 2, Context: 64})
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := fwd.SetEdits(set); err != nil {
		fwd.Close()
		t.Fatal(err)
	}
	return fwd
}

// The logit lens on Vulkan is the CPU's, layer by layer and row by row,
// with an intervention in the pass (and the soft cap of a gemma2 shape).
func TestLensParity(t *testing.T) {
	d := openTest(t, false)
	for _, o := range []model.SynthOptions{
		{Arch: "llama", Embd: 64, Layers: 3, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32},
		{Arch: "gemma2", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 700, Context: 64, Type: quant.F32, Tied: true, Window: 5, AttnSoftcap: 0.05, FinalSoftcap: 0.2},
	} {
		t.Run(o.Arch, func(t *testing.T) {
			m := synth(t, o)
			prompt := m.Tokenizer.EncodeIDs("once upon a time the little cat saw a big red ball", true)
			set := &intervene.Set{Edits: []intervene.Edit{{Layer: 0, Site: intervene.Head, Index: 1, Pos: -1, Op: intervene.Zero}}}
			lens := func(onVulkan bool) [][]float32 {
				got := make([][]float32, m.Config.Layers)
				watch := &hooks.Hooks{OnLens: func(e hooks.Lens) { got[e.Layer] = append(got[e.Layer], e.Logits[:e.N*e.Vocab]...) }}
				ctx := hooks.WithHooks(context.Background(), watch)
				fwd := editedRunner(t, d, m, set, onVulkan)
				defer fwd.Close()
				if _, err := fwd.Forward(ctx, prompt, false); err != nil {
					t.Fatal(err)
				}
				return got
			}
			want, got := lens(false), lens(true)
			for l := range want {
				if len(got[l]) != len(want[l]) || len(want[l]) != len(prompt)*m.Config.Vocab {
					t.Fatalf("layer %d: %d lens values on Vulkan, %d on the CPU", l+1, len(got[l]), len(want[l]))
				}
				var worst float64
				for i := range want[l] {
					worst = max(worst, math.Abs(float64(want[l][i]-got[l][i])))
				}
				if worst > 1e-3 {
					t.Errorf("layer %d: max |vulkan - cpu| lens logit = %g", l+1, worst)
				}
			}
		})
	}
}

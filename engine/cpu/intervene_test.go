package cpu

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"stepthrough/engine/hooks"
	"stepthrough/engine/intervene"
	"stepthrough/engine/model"
	"stepthrough/engine/oracle"
	"stepthrough/engine/quant"
)

// Each intervention, run by the CPU backend, gives the logits of the
// float64 oracle applying the same edit by hand, at every position, in
// one chunk and in short ones, and really changes them (an edit the
// runner skipped would fail here).
func TestInterventionsMatchOracle(t *testing.T) {
	shapes := []model.SynthOptions{
		{Arch: "llama", Embd: 64, Layers: 3, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32},
		{Arch: "gpt2", Embd: 64, Layers: 2, Heads: 4, FFN: 128, Vocab: 600, Context: 64, Type: quant.F32, Tied: true},
		{Arch: "gemma3", Embd: 64, Layers: 3, Heads: 2, KVHeads: 1, HeadDim: 32, FFN: 128, Vocab: 700, Context: 64, Type: quant.F32, Tied: true, Window: 6, SWAPeriod: 3},
	}
	for _, o := range shapes {
		m := synthModel(t, o)
		c := m.Config
		ids := m.Tokenizer.EncodeIDs("once upon a time the little cat saw a big red ball", true)
		rng := rand.New(rand.NewPCG(1, 2))
		vec := func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			return v
		}
		last := len(ids) - 1
		cases := []struct {
			name string
			set  intervene.Set
		}{
			{"ablated head", intervene.Set{Edits: []intervene.Edit{{Layer: 1, Site: intervene.Head, Index: 1, Pos: -1, Op: intervene.Zero}}}},
			{"scaled head", intervene.Set{Edits: []intervene.Edit{{Layer: 0, Site: intervene.Head, Index: c.Heads - 1, Pos: -1, Op: intervene.Scale, Factor: 2.5}}}},
			{"mean-ablated head", intervene.Set{Edits: []intervene.Edit{{Layer: 1, Site: intervene.Head, Index: 0, Pos: -1, Op: intervene.Replace, Vector: vec(c.HeadDim)}}}},
			{"ablated MLP unit", intervene.Set{Edits: []intervene.Edit{{Layer: 0, Site: intervene.Unit, Index: 7, Pos: -1, Op: intervene.Zero},
				{Layer: 1, Site: intervene.Unit, Index: 3, Pos: -1, Op: intervene.Scale, Factor: -3}}}},
			{"mean-ablated MLP unit", intervene.Set{Edits: []intervene.Edit{{Layer: 1, Site: intervene.Unit, Index: 5, Pos: -1, Op: intervene.Replace, Vector: []float32{2.5}}}}},
			{"ablated attention", intervene.Set{Edits: []intervene.Edit{{Layer: 1, Site: intervene.Attn, Pos: -1, Op: intervene.Zero}}}},
			{"ablated MLP", intervene.Set{Edits: []intervene.Edit{{Layer: 0, Site: intervene.MLP, Pos: -1, Op: intervene.Zero}}}},
			{"patched residual", intervene.Set{Edits: []intervene.Edit{{Layer: 0, Site: intervene.Resid, Pos: 3, Op: intervene.Replace, Vector: vec(c.Embd)}}}},
			{"patched head at the last position", intervene.Set{Edits: []intervene.Edit{{Layer: 1, Site: intervene.Head, Index: 1, Pos: last, Op: intervene.Replace, Vector: vec(c.HeadDim)}}}},
			{"steered layer", intervene.Set{Edits: []intervene.Edit{{Layer: 1, Site: intervene.Resid, Pos: -1, Op: intervene.Add, Factor: 4, Vector: vec(c.Embd)}}}},
		}
		plain := oracle.Forward(m, ids)
		for _, tc := range cases {
			t.Run(o.Arch+"/"+tc.name, func(t *testing.T) {
				want := oracle.Edited(m, ids, &tc.set, nil)
				if moved := maxDiff64(want, plain); moved < 1e-3 {
					t.Fatalf("the edit moves the oracle's logits by %g: the case tests nothing", moved)
				}
				for _, batch := range []int{512, 4} {
					got := forwardEdited(t, m, Options{Threads: 2, MaxBatch: batch}, ids, &tc.set)
					worst, scale := oracleDiff(got, want)
					if worst > 1e-4*max(1, scale) {
						t.Errorf("batch %d: max |runner - float64 oracle| = %g (logits up to %g)", batch, worst, scale)
					}
				}
			})
		}
	}
}

// A steer of strength 0 and a patch of a position's residual with its own
// value give the logits of no edit, bit for bit.
func TestNeutralInterventionsAreExact(t *testing.T) {
	m := synthModel(t, model.SynthOptions{Arch: "llama", Embd: 64, Layers: 3, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32})
	ids := m.Tokenizer.EncodeIDs("once upon a time the little cat saw a big red ball", true)
	o := Options{Threads: 2}
	base := forwardEdited(t, m, o, ids, nil)
	// the residual stream after layer 1 at position 5, as the pass computed it
	var own []float32
	watch := &hooks.Hooks{OnResidual: func(e hooks.Residual) {
		if e.Layer == 1 && e.After == "mlp" {
			own = slices.Clone(e.X[5*m.Config.Embd : 6*m.Config.Embd])
		}
	}}
	r, err := NewRunner(m, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Forward(hooks.WithHooks(context.Background(), watch), ids, true); err != nil {
		t.Fatal(err)
	}
	r.Close()
	for name, set := range map[string]*intervene.Set{
		"zero-strength steer": {Edits: []intervene.Edit{{Layer: 1, Site: intervene.Resid, Pos: -1, Op: intervene.Add, Factor: 0, Vector: make([]float32, m.Config.Embd)}}},
		"self-patch":          {Edits: []intervene.Edit{{Layer: 1, Site: intervene.Resid, Pos: 5, Op: intervene.Replace, Vector: own}}},
		"scale by one":        {Edits: []intervene.Edit{{Layer: 2, Site: intervene.Head, Index: 1, Pos: -1, Op: intervene.Scale, Factor: 1}}},
	} {
		if got := forwardEdited(t, m, o, ids, set); !slices.Equal(got, base) {
			t.Errorf("%s changed the logits", name)
		}
	}
}

// An edit outside the model is refused by the pass, naming it.
func TestInterventionRefused(t *testing.T) {
	m := synthModel(t, model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32})
	r, err := NewRunner(m, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	set := &intervene.Set{Edits: []intervene.Edit{{Layer: 2, Site: intervene.Head, Pos: -1, Op: intervene.Zero}}}
	if err := r.SetEdits(set); err == nil {
		t.Error("the runner took an edit of layer 3 of 2")
	}
	if _, err := r.Forward(context.Background(), []int32{1, 2}, false); err != nil {
		t.Errorf("a pass after the refused edit: %v", err)
	}
}

func forwardEdited(t testing.TB, m *model.Model, o Options, ids []int32, set *intervene.Set) []float32 {
	t.Helper()
	r, err := NewRunner(m, o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.SetEdits(set); err != nil {
		t.Fatal(err)
	}
	got, err := r.Forward(context.Background(), ids, true)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func maxDiff64(a, b [][]float64) float64 {
	var d float64
	for i := range a {
		for j := range a[i] {
			d = max(d, math.Abs(a[i][j]-b[i][j]))
		}
	}
	return d
}

// The logit lens at every layer and position is the float64 oracle's
// final norm and output projection of that layer's residual stream (with
// an edit in the pass, of the edited stream), and the last layer's lens
// is the logits.
func TestLensMatchesOracle(t *testing.T) {
	for _, o := range []model.SynthOptions{
		{Arch: "llama", Embd: 64, Layers: 3, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32},
		{Arch: "gemma2", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 700, Context: 64, Type: quant.F32, Tied: true, Window: 5, AttnSoftcap: 0.05, FinalSoftcap: 0.2},
	} {
		t.Run(o.Arch, func(t *testing.T) {
			m := synthModel(t, o)
			c := m.Config
			ids := m.Tokenizer.EncodeIDs("once upon a time the little cat saw a big red ball", true)
			set := &intervene.Set{Edits: []intervene.Edit{{Layer: 0, Site: intervene.Head, Index: 1, Pos: -1, Op: intervene.Zero}}}
			want := make([][][]float64, c.Layers)
			logits := oracle.Edited(m, ids, set, func(l, p int, x []float64) { want[l] = append(want[l], oracle.Output(m, x)) })
			got := make([][]float32, c.Layers)
			watch := &hooks.Hooks{OnLens: func(e hooks.Lens) { got[e.Layer] = append(got[e.Layer], e.Logits[:e.N*e.Vocab]...) }}
			r, err := NewRunner(m, Options{Threads: 2, MaxBatch: 5})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := r.SetEdits(set); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Forward(hooks.WithHooks(context.Background(), watch), ids, true); err != nil {
				t.Fatal(err)
			}
			for l := range c.Layers {
				if len(got[l]) != len(ids)*c.Vocab {
					t.Fatalf("layer %d: %d lens values, want %d", l+1, len(got[l]), len(ids)*c.Vocab)
				}
				var worst, scale float64
				for p := range ids {
					for j := range c.Vocab {
						worst = max(worst, math.Abs(float64(got[l][p*c.Vocab+j])-want[l][p][j]))
						scale = max(scale, math.Abs(want[l][p][j]))
					}
				}
				if worst > 1e-4*max(1, scale) {
					t.Errorf("layer %d: max |lens - float64 oracle| = %g (logits up to %g)", l+1, worst, scale)
				}
			}
			if d := maxDiff64(want[c.Layers-1], logits); d != 0 {
				t.Errorf("the oracle's last lens differs from its logits by %g", d)
			}
		})
	}
}

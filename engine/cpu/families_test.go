package cpu

import (
	"context"
	"fmt"
	"math"
	"testing"

	"stepthrough/engine/model"
	"stepthrough/engine/oracle"
	"stepthrough/engine/quant"
)

// familyCases are random-weight models of every family, in shapes that
// exercise what each adds: a head size apart from width ÷ heads, windows
// shorter than the prompt, soft caps small enough to bite, local RoPE
// bases, scaled RoPE and LongRoPE factors.
var familyCases = []model.SynthOptions{
	{Arch: "qwen2", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 600, Context: 64, Type: quant.F32, Tied: true, RopeBase: 1e6},
	{Arch: "qwen3", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 96, Vocab: 600, Context: 64, Type: quant.F32, RopeBase: 1e6},
	{Arch: "qwen3", Embd: 64, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 48, FFN: 96, Vocab: 600, Context: 64, Type: quant.Q8_0, Tied: true},
	{Arch: "gemma2", Embd: 64, Layers: 3, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 700, Context: 64, Type: quant.F32, Tied: true,
		Window: 5, AttnSoftcap: 0.05, FinalSoftcap: 0.2},
	{Arch: "gemma3", Embd: 64, Layers: 4, Heads: 2, KVHeads: 1, HeadDim: 32, FFN: 128, Vocab: 700, Context: 64, Type: quant.F32, Tied: true,
		Window: 6, SWAPeriod: 3, RopeBase: 1e6, LocalBase: 100, FinalSoftcap: 0.2},
	{Arch: "gemma3", Embd: 64, Layers: 2, Heads: 4, KVHeads: 4, FFN: 96, Vocab: 700, Context: 64, Type: quant.F16, Tied: true},
	{Arch: "phi3", Embd: 64, Layers: 2, Heads: 4, KVHeads: 4, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32, FusedQKV: true, RopeFactors: true, RopeOrigCtx: 32},
	{Arch: "phi3", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32},
	{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32, RopeScaling: "yarn", RopeFactor: 4, RopeOrigCtx: 16},
	{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32, RopeScaling: "linear", RopeFactor: 2},
	// the optional tensors llama.cpp's loaders read: every bias, a fused
	// Q·K·V matrix in families whose files usually split it, and qwen2
	// without the Q, K and V biases its files carry
	{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32, Biases: true},
	{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32, FusedQKV: true, Biases: true},
	{Arch: "qwen2", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 600, Context: 64, Type: quant.F32, Biases: true, RopeBase: 1e6},
	{Arch: "qwen2", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 600, Context: 64, Type: quant.F32, NoQKVBias: true, FusedQKV: true, Tied: true},
	{Arch: "qwen3", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 96, Vocab: 600, Context: 64, Type: quant.F32, FusedQKV: true, Biases: true},
	{Arch: "gemma3", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32, Tied: true, Biases: true},
}

func familyName(o model.SynthOptions) string {
	n := fmt.Sprintf("%s-%s", o.Arch, o.Type)
	if o.RopeScaling != "" {
		n += "-" + o.RopeScaling
	}
	if o.HeadDim != 0 {
		n += fmt.Sprintf("-hd%d", o.HeadDim)
	}
	if o.FusedQKV {
		n += "-fused"
	}
	if o.Biases {
		n += "-biases"
	}
	if o.NoQKVBias {
		n += "-nobias"
	}
	return n
}

const familyPrompt = "once upon a time the little cat saw a big red ball and the dog was happy so they went to the park with mom"

// Every family's logits at every position agree with the float64 oracle:
// decoding row by row, in tiles (a long chunk), and in short chunks.
func TestFamiliesMatchNaiveForward(t *testing.T) {
	for _, tc := range familyCases {
		t.Run(familyName(tc), func(t *testing.T) {
			m := synthModel(t, tc)
			ids := m.Tokenizer.EncodeIDs(familyPrompt, true)
			if tc.Window > 0 && len(ids) < 3*tc.Window || len(ids) < tileMinRows {
				t.Fatalf("prompt of %d tokens is too short for the window %d and the tiles", len(ids), tc.Window)
			}
			want := oracle.Forward(m, ids)
			for _, batch := range []int{512, 3} {
				got := forwardAll(t, m, Options{Threads: 2, MaxBatch: batch}, ids)
				worst, scale := oracleDiff(got, want)
				if worst > 1e-4*max(1, scale) {
					t.Errorf("batch %d: max |runner - float64 oracle| = %g (logits up to %g)", batch, worst, scale)
				}
			}
		})
	}
}

// oracleDiff is the largest |got − want| over every position's logits
// (got as forwardAll returns them, want as oracle.Forward does) and the
// largest |want|, the scale a tolerance is taken of.
func oracleDiff(got []float32, want [][]float64) (worst, scale float64) {
	for p, row := range want {
		for j, w := range row {
			worst = max(worst, math.Abs(float64(got[p*len(row)+j])-w))
			scale = max(scale, math.Abs(w))
		}
	}
	return worst, scale
}

// forwardAll is the logits of every position of ids in a new runner.
func forwardAll(t testing.TB, m *model.Model, o Options, ids []int32) []float32 {
	t.Helper()
	r, err := NewRunner(m, o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got, err := r.Forward(context.Background(), ids, true)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A prompt chunk in tiles with heads of 8 values and a context barely
// longer than it (stories260K's shape under `bench -p 16 -n 4`, which
// sizes the context to the run) matches the float64 oracle: at AVX2 the
// broadcast GEMM's tile once read past its worker's buffer there.
func TestTilesSmallHeadsShortContext(t *testing.T) {
	o := model.SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 8, KVHeads: 4, FFN: 96, Vocab: 400, Context: 64}
	m := synthModel(t, o)
	ids := make([]int32, 17)
	for i := range ids {
		ids[i] = int32(7 + 13*i%390)
	}
	want := oracle.Forward(m, ids)
	for _, ctx := range []int{17, 20, 24, 31} {
		got := forwardAll(t, m, Options{Threads: 2, Context: ctx}, ids)
		worst, scale := oracleDiff(got, want)
		if worst > 1e-4*max(1, scale) {
			t.Errorf("context %d: max |runner - float64 oracle| = %g (logits up to %g)", ctx, worst, scale)
		}
	}
}

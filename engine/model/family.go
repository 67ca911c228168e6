package model

import (
	"fmt"
	"math"
)

// Feature is one way a model's forward pass differs from llama's: what
// `inspect` prints, what the model map draws, and what a backend checks it
// can compute before it takes the model.
type Feature struct {
	Key  string `json:"key"`  // stable id: "qk-norm", "sliding-window", …
	Name string `json:"name"` // what it is, with this model's numbers
	Why  string `json:"why"`  // why a family has it, in a sentence
}

// Features lists how m's forward pass differs from llama's, in the order
// a pass meets them.
func (m *Model) Features() []Feature {
	s, c, W := m.Spec, m.Config, m.Weights
	var f []Feature
	add := func(on bool, key, name, why string) {
		if on {
			f = append(f, Feature{key, name, why})
		}
	}
	add(s.PosEmbd, "learned-positions", "learned position embeddings added to the token's",
		"GPT-2 learns one vector per position instead of rotating queries and keys")
	add(s.EmbedScale, "embed-scale", fmt.Sprintf("embedding × √%d", c.Embd),
		"the embedding table is shared with the output, so its rows are small; scaling brings them up to the residual stream's size")
	add(s.Norm == LayerNorm, "layernorm", "LayerNorm (mean and variance, with a bias) instead of RMSNorm",
		"the original transformer's normalisation; RMSNorm later dropped the mean for speed")
	add(hasQKV(W), "fused-qkv", "one fused Q/K/V matrix", "one product instead of three; the numbers are the same")
	add(hasBias(W), "qkv-bias", "biases on Q, K and V", "a learned offset per query and key dimension (Qwen2 keeps them; most families dropped them)")
	add(W.OutputB != nil, "logit-bias", "a bias added to the logits", "a learned offset per vocabulary entry, the same at every position")
	add(c.QDim() != c.Embd, "head-size", fmt.Sprintf("head size %d (heads × size = %d, not the width %d)", c.HeadDim, c.QDim(), c.Embd),
		"the head size is chosen on its own, not width ÷ heads")
	add(s.QKNorm, "qk-norm", "each head's query and key RMS-normed before RoPE",
		"keeps attention scores from growing without bound as training goes on")
	add(s.Rope == RopeNeoX, "neox-rope", "RoPE rotates value i with value i + d/2 (NEOX)",
		"the Hugging Face layout: the same rotation, pairing halves instead of neighbours")
	add(s.Rope != RopeNone && (c.Rope.FreqScale != 1 || c.Rope.ExtFactor != 0 || c.Rope.AttnFactor != 1), "rope-scaling",
		fmt.Sprintf("RoPE scaled (%s, factor %g)", c.Rope.Scaling, 1/c.Rope.FreqScale),
		"stretches positions so a longer context looks like the trained one")
	add(W.RopeFreqs != nil || W.RopeLong != nil, "rope-factors", "RoPE frequency factors per pair",
		"slows the low frequencies so long contexts stay distinguishable (Llama 3, LongRoPE)")
	add(c.Window > 0, "sliding-window", fmt.Sprintf("%d of %d layers attend to only the last %d positions", countTrue(c.Local), c.Layers, c.Window),
		"local layers cost less and keep a smaller cache; the global layers still see the whole text")
	add(c.Window > 0 && c.RopeLocal.Base != c.Rope.Base, "local-rope", fmt.Sprintf("local layers rotate with base %g, global with %g", c.RopeLocal.Base, c.Rope.Base),
		"short-range layers need fast-turning angles; long-range ones slow ones")
	add(c.AttnScale != float32(1/math.Sqrt(float64(c.HeadDim))), "attn-scale", fmt.Sprintf("scores × %.4g instead of 1/√%d", c.AttnScale, c.HeadDim), "the family scales scores by the width per head, not the head size")
	add(c.AttnSoftcap != 0, "attn-softcap", fmt.Sprintf("attention scores soft-capped at ±%g", c.AttnSoftcap),
		"cap·tanh(x/cap) keeps any one score from dominating the softmax")
	add(s.PostNorms, "post-norms", "attention and MLP outputs normed again before the residual add",
		"norms on both sides of each sub-layer keep the residual stream's scale steady")
	add(s.FFN == GELU, "gelu", "GELU MLP without a gate", "GPT-2's MLP: up, GELU, down")
	add(s.FFN == GeGLU, "geglu", "GELU-gated MLP (GeGLU) instead of SiLU-gated", "the gate's smooth curve differs; the shape is llama's")
	add(s.FFN == SwiGLUFused, "fused-gate-up", "gate and up in one matrix", "one product instead of two; the numbers are the same")
	add(c.FinalSoftcap != 0, "final-softcap", fmt.Sprintf("logits soft-capped at ±%g", c.FinalSoftcap),
		"keeps logits bounded, so no token's probability saturates")
	add(W.Output == nil, "tied-output", "output matrix tied to the token embedding", "one table for reading tokens in and scoring them out saves memory")
	return f
}

func hasQKV(w *Weights) bool { return len(w.Layers) > 0 && w.Layers[0].QKV != nil }

func hasBias(w *Weights) bool {
	return len(w.Layers) > 0 && (w.Layers[0].QB != nil || w.Layers[0].KB != nil || w.Layers[0].VB != nil)
}

func countTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

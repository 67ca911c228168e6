package quantlens

import (
	"fmt"
	"slices"

	"stepthrough/engine/quantize"
	"stepthrough/engine/sample"
)

// Drift is how far one type's residual stream is from the reference's at
// one point of every layer, one value per position: the relative error
// ‖b−a‖/‖a‖ (a the reference's row) and the cosine similarity a·b/‖a‖‖b‖.
type Drift struct {
	RelErr, Cosine []float64
}

// Head is how one head's attention pattern moved: the Jensen–Shannon
// divergence (bits, 0 to 1) between its rows under the two types, the
// mean and the largest over positions.
type Head struct {
	JSMean, JSMax float64
}

// Layer is one layer compared.
type Layer struct {
	Attn, MLP Drift // after the attention block, after the MLP
	Heads     []Head
	// LensRef and LensOther are, per position, the logit lens's top token
	// after this layer under the reference and under the other type;
	// LensAgree says where they are the same.
	LensRef, LensOther []int32
	LensAgree          []bool
}

// Report is two passes over one prompt compared, the first (Ref) the
// reference.
type Report struct {
	Tokens []int32
	Layers []Layer
	// FirstDisagree is, per position, the first layer (0-based) where the
	// lens's top tokens differ; -1 where they agree at every layer.
	FirstDisagree []int
	// Final compares each position's next-token distributions (KL of the
	// other from the reference, top token, top-5 overlap).
	Final []quantize.StepStat
}

// Compare measures how far other strays from ref, layer by layer.
func Compare(ref, other *Pass) (*Report, error) {
	if ref.Layers != other.Layers || ref.Heads != other.Heads || ref.Embd != other.Embd || ref.Vocab != other.Vocab || !slices.Equal(ref.Tokens, other.Tokens) {
		return nil, fmt.Errorf("quantization lens: the passes are of different shapes or prompts")
	}
	n := len(ref.Tokens)
	r := &Report{Tokens: ref.Tokens, FirstDisagree: make([]int, n)}
	for t := range n {
		r.FirstDisagree[t] = -1
	}
	for l := range ref.Layers {
		layer := Layer{Attn: drift(ref.AttnResid[l], other.AttnResid[l], n, ref.Embd), MLP: drift(ref.MLPResid[l], other.MLPResid[l], n, ref.Embd),
			Heads: heads(ref.Weights[l], other.Weights[l], n, ref.Heads), LensRef: ref.LensTop[l], LensOther: other.LensTop[l], LensAgree: make([]bool, n)}
		for t := range n {
			layer.LensAgree[t] = ref.LensTop[l][t] == other.LensTop[l][t]
			if !layer.LensAgree[t] && r.FirstDisagree[t] < 0 {
				r.FirstDisagree[t] = l
			}
		}
		r.Layers = append(r.Layers, layer)
	}
	V := ref.Vocab
	for t := range n {
		a, b := sample.LogSoftmax(ref.Logits[t*V:(t+1)*V]), sample.LogSoftmax(other.Logits[t*V:(t+1)*V])
		r.Final = append(r.Final, quantize.Stat(a, b))
	}
	return r, nil
}

// drift compares n rows of width d.
func drift(a, b []float32, n, d int) Drift {
	out := Drift{RelErr: make([]float64, n), Cosine: make([]float64, n)}
	for t := range n {
		out.RelErr[t], out.Cosine[t] = RelErrCos(a[t*d:(t+1)*d], b[t*d:(t+1)*d])
	}
	return out
}

// heads compares every head's attention rows (n×heads×n, row t over
// positions 0..t).
func heads(a, b []float32, n, heads int) []Head {
	out := make([]Head, heads)
	for h := range heads {
		for t := range n {
			off := (t*heads + h) * n
			js := JSBits(a[off:off+t+1], b[off:off+t+1])
			out[h].JSMean += js / float64(n)
			out[h].JSMax = max(out[h].JSMax, js)
		}
	}
	return out
}

package quantize

import (
	"math"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/quant"
)

// A fused attn_qkv (phi3) is counted as attn_v, as llama.cpp does: Q6_K
// in the layers that get more bits under the _M presets, the base type
// elsewhere; the plain targets leave it at the base type.
func TestPlanFusedQKV(t *testing.T) {
	l := Layout{Arch: "phi3", Layers: 32, Heads: 32, KVHeads: 32}
	for i := range 32 {
		l.Tensors = append(l.Tensors, Dims{Name: "blk." + strconv.Itoa(i) + ".attn_qkv.weight", Dims: []uint64{3072, 9216}, Type: quant.F16})
	}
	for _, tc := range []struct {
		target     string
		more, rest quant.Type
	}{{"Q4_K_M", quant.Q6_K, quant.Q4_K}, {"Q5_K_M", quant.Q6_K, quant.Q5_K}, {"Q4_K", quant.Q4_K, quant.Q4_K}, {"Q8_0", quant.Q8_0, quant.Q8_0}} {
		t.Run(tc.target, func(t *testing.T) {
			plan := l.Plan(tc.target)
			got, want := map[int]quant.Type{}, map[int]quant.Type{}
			for i := range 32 {
				got[i] = plan["blk."+strconv.Itoa(i)+".attn_qkv.weight"]
				want[i] = tc.rest
				if moreBits(i, 32) {
					want[i] = tc.more
				}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("attn_qkv types by layer (-want +got):\n%s", d)
			}
		})
	}
}

// The mixed presets' sizes on published shapes match the files
// llama.cpp's quantizer wrote for them (decimal GB, as the model hubs
// list them; a file adds a few MB of metadata and vocabulary):
// Llama 2 70B Q4_K_M 41.42 GB (TheBloke/Llama-2-70B-GGUF), Llama 3 8B
// Q4_K_M 4.92 GB (bartowski/Meta-Llama-3-8B-Instruct-GGUF), Llama 2 7B
// Q4_K_M 4.08 GB and Q5_K_M 4.78 GB (TheBloke/Llama-2-7B-GGUF).
func TestMixedPresetSizes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		l      Layout
		target string
		wantGB float64
	}{
		{"Llama 2 70B", LlamaLayout(8192, 28672, 80, 64, 8, 128, 32000, false), "Q4_K_M", 41.42},
		{"Llama 3 8B", LlamaLayout(4096, 14336, 32, 32, 8, 128, 128256, false), "Q4_K_M", 4.92},
		{"Llama 2 7B", LlamaLayout(4096, 11008, 32, 32, 32, 128, 32000, false), "Q4_K_M", 4.08},
		{"Llama 2 7B", LlamaLayout(4096, 11008, 32, 32, 32, 128, 32000, false), "Q5_K_M", 4.78},
	} {
		t.Run(tc.name+" "+tc.target, func(t *testing.T) {
			_, bytes := tc.l.MixOf(tc.target).Total()
			if got := bytes / 1e9; math.Abs(got-tc.wantGB) > 0.02 {
				t.Errorf("%s %s: %.3f GB, the published file is %.2f GB", tc.name, tc.target, got, tc.wantGB)
			}
		})
	}
}

package memcalc

import (
	"math"
	"strings"
	"testing"

	"stepthrough/engine/quant"
)

// The round 70 B: 70 B parameters at 2 bytes are 140 GB before any
// cache; at 8 and 4 bits (with their block scales) proportionally less.
func TestSeventyB(t *testing.T) {
	s, ok := Preset("Round 70B (Llama 2 70B shape)")
	if !ok {
		t.Fatal("no 70B preset")
	}
	for _, tt := range []struct {
		typ  quant.Type
		want float64
		text string
	}{
		{quant.F16, 140e9, "140.00 GB"},
		{quant.Q8_0, 70e9 * 8.5 / 8, "74.38 GB"},
		{quant.Q4_0, 70e9 * 4.5 / 8, "39.38 GB"},
	} {
		f := Find(Calculate(s, Inputs{Weights: tt.typ, KVBytes: 2, Context: 4096, Batch: 1}), "weights")
		if math.Abs(f.Value-tt.want) > 1 || !strings.HasSuffix(f.Formula, tt.text) || !strings.Contains(f.Formula, "70,000,000,000 parameters") {
			t.Errorf("%s: %g, %q; want %g ending %q", tt.typ, f.Value, f.Formula, tt.want, tt.text)
		}
	}
}

// GQA: Llama 2 70B's 8 KV heads cache 8× less than its 64 query heads
// would; Llama 2 7B has none (MHA).
func TestKVCache(t *testing.T) {
	l70, _ := Preset("Llama 2 70B")
	fs := Calculate(l70, Inputs{Weights: quant.F16, KVBytes: 2, Context: 4096, Batch: 8, MemoryGB: 192})
	if v := Find(fs, "KV cache per token").Value; v != 2*80*8*128*2 { // 327,680 bytes
		t.Errorf("Llama 2 70B KV per token: %g", v)
	}
	if v := Find(fs, "KV cache per token without GQA").Value; v != 2*80*64*128*2 {
		t.Errorf("without GQA: %g", v)
	}
	if v := Find(fs, "KV cache of the batch").Value; v != 2*80*8*128*2*4096*8 {
		t.Errorf("batch of 8: %g", v)
	}
	users := Find(fs, "users that fit")
	if want := math.Floor((192e9 - 68.98e9*2) / (2 * 80 * 8 * 128 * 2 * 4096)); users.Value != want {
		t.Errorf("users in 192 GB: %g, want %g (%s)", users.Value, want, users.Formula)
	}
	l7, _ := Preset("Llama 2 7B")
	fs = Calculate(l7, Inputs{Weights: quant.F16, KVBytes: 2, Context: 4096, Batch: 1})
	if v := Find(fs, "KV cache per token").Value; v != 2*32*32*128*2 || Find(fs, "KV cache per token without GQA").Name != "" {
		t.Errorf("Llama 2 7B KV per token: %g", v)
	}
}

func TestCost(t *testing.T) {
	s, _ := Preset("Llama 3 8B")
	f := Find(Calculate(s, Inputs{Weights: quant.Q4_K, KVBytes: 2, Context: 8192, Batch: 1, TokensPerSec: 1000, PricePerHour: 3.6}), "cost per million tokens")
	if math.Abs(f.Value-1) > 1e-12 || !strings.Contains(f.Formula, "$3.6 an hour") || !strings.HasSuffix(f.Formula, "= $1 per million tokens") || f.Unit != "US dollars" {
		t.Errorf("3.6 an hour at 1,000 tokens/s: %g (%s)", f.Value, f.Formula)
	}
	if BitsPerWeight(quant.Q4_K) != 4.5 || BitsPerWeight(quant.Q6_K) != 6.5625 || BitsPerWeight(quant.F32) != 32 {
		t.Error("bits per weight")
	}
}

// 70 B at F16 in 80 GB: the weights alone do not fit, and the figure
// says so (with how many such memories would hold them) instead of a bare
// 0; in 192 GB they fit and the users are counted.
func TestUsersThatFitWhenTheWeightsDoNot(t *testing.T) {
	s, _ := Preset("Round 70B (Llama 2 70B shape)")
	for _, tt := range []struct {
		memory float64
		users  float64
		says   string
	}{
		{80, 0, "none: the weights alone (140.00 GB) do not fit in the 80.00 GB of memory, so not one user fits; split them over at least 2 such memories, or store them in fewer bits"},
		{140, 0, "none: the weights alone (140.00 GB) fill all 140.00 GB of memory"},
		{192, 38, "(192.00 GB − 140.00 GB of weights) ÷ 1.34 GB per user = 38"},
	} {
		f := Find(Calculate(s, Inputs{Weights: quant.F16, KVBytes: 2, Context: 4096, Batch: 1, MemoryGB: tt.memory}), "users that fit")
		if f.Value != tt.users || !strings.HasPrefix(f.Formula, tt.says) {
			t.Errorf("%g GB: %g users, %q; want %g, starting %q", tt.memory, f.Value, f.Formula, tt.users, tt.says)
		}
	}
}

// The preset's old name (in links made before its rename) still opens
// it; the arithmetic's counts read as English.
func TestPresetOldNameAndWords(t *testing.T) {
	old, ok := Preset("70B (the seed's example)")
	if !ok || old.Name != Presets[0].Name {
		t.Errorf("the old name: %+v, %v", old, ok)
	}
	one := Find(Calculate(old, Inputs{Weights: quant.F16, KVBytes: 2, Context: 4096, Batch: 1}), "KV cache of the batch").Formula
	if !strings.Contains(one, "× 1 user =") {
		t.Errorf("one user: %q", one)
	}
	if got := Count(70e9); got != "70,000,000,000" {
		t.Errorf("Count(70e9) = %q", got)
	}
}

// A published shape's weights follow llama.cpp's per-tensor rule, so the
// mixed presets come out at the size of the files it writes (Llama 2 70B
// Q4_K_M 41.42 GB and Q8_0 73.29 GB, TheBloke/Llama-2-70B-GGUF), and the
// working names each type's share.
func TestMixedWeights(t *testing.T) {
	s, ok := Preset("Llama 2 70B")
	if !ok {
		t.Fatal("no Llama 2 70B preset")
	}
	for _, tc := range []struct {
		target string
		typ    quant.Type
		text   string
		parts  []string
	}{
		{"Q4_K_M", quant.Q4_K, "41.42 GB", []string{"in Q4_K × 4.5 bits", "in Q6_K × 6.562 bits", "in Q5_K × 5.5 bits", "for Q4_K_M"}},
		{"Q8_0", quant.Q8_0, "73.29 GB", []string{"in Q8_0 × 8.5 bits", "in F32 × 32 bits"}},
	} {
		f := Find(Calculate(s, Inputs{Weights: tc.typ, Target: tc.target, KVBytes: 2, Context: 4096, Batch: 1}), "weights")
		if !strings.HasSuffix(f.Formula, tc.text) {
			t.Errorf("%s: %q, want it to end %q", tc.target, f.Formula, tc.text)
		}
		for _, p := range tc.parts {
			if !strings.Contains(f.Formula, p) {
				t.Errorf("%s: %q does not say %q", tc.target, f.Formula, p)
			}
		}
	}
}

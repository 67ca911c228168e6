package model

import (
	"testing"

	"stepthrough/engine/quant"
)

// A pass's multiply-adds, worked by hand for a small llama (width 64, 4
// heads of 16 sharing 2 KV heads, FFN 96, 2 layers, 700 tokens): each
// layer's matrices are q 64×64, k and v 64×32, out 64×64, gate, up and
// down 64×96: 30,720 a token.
func TestPassWork(t *testing.T) {
	m, err := Random(SynthOptions{Arch: "llama", Embd: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 700, Context: 64, Type: quant.F32})
	if err != nil {
		t.Fatal(err)
	}
	const layers = 2 * 30720
	for _, tc := range []struct {
		name            string
		n, pos0, logits int
		want            int64
	}{
		{"one token, nothing cached", 1, 0, 1, layers + 2*2*64*1 + 700*64},
		{"a prompt of 3, its last logits", 3, 0, 1, 3*layers + 2*2*64*(1+2+3) + 700*64},
		{"one token after 10", 1, 10, 1, layers + 2*2*64*11 + 700*64},
		{"3 tokens after 10, every row's logits", 3, 10, 3, 3*layers + 2*2*64*(11+12+13) + 3*700*64},
		{"no logits", 2, 0, 0, 2*layers + 2*2*64*(1+2)},
	} {
		if got := m.PassWork(tc.n, tc.pos0, tc.logits); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if got, want := m.LensWork(8), int64(8*2*700*64); got != want {
		t.Errorf("lens of 8 rows: %d, want %d", got, want)
	}
}

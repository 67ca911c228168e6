package cpu

import (
	"context"
	"testing"

	"stepthrough/engine/model"
)

func BenchmarkZZPP(b *testing.B) {
	m, err := model.Load("../../.bench/suite-110M-q4_k_m.gguf")
	if err != nil {
		b.Fatal(err)
	}
	r, _ := NewRunner(m, Options{Context: 512})
	defer r.Close()
	ids := make([]int32, 128)
	for i := range ids {
		ids[i] = int32(i * 7)
	}
	for b.Loop() {
		r.Reset()
		r.Forward(context.Background(), ids, false)
	}
}

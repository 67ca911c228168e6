package cpu

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"slices"
	"testing"

	"stepthrough/engine/model"
	"stepthrough/engine/reftest"
)

func loadStories(t testing.TB) *model.Model {
	t.Helper()
	m, err := model.Load(reftest.Path(t, "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func readF32(t testing.TB, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// The logits of every prompt position match llama.cpp's within 1e-4.
func TestStoriesLogitsMatchLlamaCpp(t *testing.T) {
	m := loadStories(t)
	want := readF32(t, reftest.Path(t, "models", "stories260K", "once-upon.logits.f32"))
	ids := m.Tokenizer.EncodeIDs("Once upon a time", true)
	if !slices.Equal(ids, []int32{1, 403, 407, 261, 378}) {
		t.Fatalf("tokens %v", ids)
	}
	for _, threads := range []int{1, 2, 3} {
		for _, batch := range []int{512, 2} { // one prefill batch, and chunks
			got := forwardAll(t, m, Options{Threads: threads, MaxBatch: batch}, ids)
			if len(got) != len(want) {
				t.Fatalf("%d logits, want %d", len(got), len(want))
			}
			var worst float64
			for i := range got {
				worst = max(worst, math.Abs(float64(got[i]-want[i])))
			}
			if worst > 1e-4 {
				t.Errorf("threads %d batch %d: max |logit - llama.cpp| = %g > 1e-4", threads, batch, worst)
			}
			t.Logf("threads %d batch %d: max abs diff %.2g", threads, batch, worst)
		}
	}
}

// Decoding token by token from the cache gives the logits of a batch pass.
func TestDecodeMatchesPrefill(t *testing.T) {
	m := loadStories(t)
	ids := m.Tokenizer.EncodeIDs("Once upon a time, there was a cat", true)
	r, _ := NewRunner(m, Options{Threads: 2})
	defer r.Close()
	all, err := r.Forward(context.Background(), ids, true)
	if err != nil {
		t.Fatal(err)
	}
	r.Reset()
	V := m.Config.Vocab
	for i, id := range ids {
		got, err := r.Forward(context.Background(), []int32{id}, false)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < V; j++ {
			if d := math.Abs(float64(got[j] - all[i*V+j])); d > 1e-5 {
				t.Fatalf("position %d logit %d: decode %g, prefill %g", i, j, got[j], all[i*V+j])
			}
		}
	}
}

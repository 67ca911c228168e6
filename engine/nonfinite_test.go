package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"stepthrough/engine/intervene"
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

func TestFinite(t *testing.T) {
	for _, c := range []struct {
		x    []float32
		want bool
	}{
		{nil, true},
		{[]float32{1, -2, 3e38, -3e38, 0, 5}, true},
		{[]float32{1, 2, 3, 4, 5, 6, 7, float32(math.NaN())}, false},
		{[]float32{float32(math.Inf(1)), 0, 0, 0}, false},
		{[]float32{0, 0, 0, 0, 0, float32(math.Inf(-1))}, false},
		{[]float32{0, 0, 0, 0, 0, 0, 0, 0, 0, float32(math.NaN())}, false}, // the odd one after the pairs
		{[]float32{float32(math.NaN()), 0, 0}, false},
		{[]float32{math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, -0.0, 1}, true},
	} {
		for off := range min(2, len(c.x)+1) { // from an 8-byte boundary and from 4 bytes past one
			x := append(make([]float32, off, off+len(c.x)), c.x...)[off:]
			if got := finite(x); got != c.want {
				t.Errorf("finite(%v) at offset %d = %v", c.x, off, got)
			}
		}
		for i := range c.x { // a NaN anywhere is found
			x := slices.Clone(c.x)
			x[i] = float32(math.NaN())
			if finite(x) {
				t.Errorf("finite(%v) missed the NaN at %d", x, i)
			}
		}
	}
}

// A pass whose logits overflow is refused, names the layer and site that
// first overflowed, keeps nothing, and the session goes on as if it had
// never run — on every backend.
func TestNonFiniteLogitsRefused(t *testing.T) {
	m, err := model.Random(model.SynthOptions{Arch: "llama", Embd: 32, Layers: 3, Heads: 2, FFN: 64, Vocab: 600, Context: 32, Type: quant.F32})
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int32{1, 17, 42, 99}
	for _, backend := range []string{"cpu", "vulkan"} {
		t.Run(backend, func(t *testing.T) {
			l := loadOn(t, m, backend)
			s := newSession(t, l, 32)
			eval(t, s, prompt[:2]...) // the plain run, in the same two passes (kernels may sum a pass of 4 differently)
			want := slices.Clone(eval(t, s, prompt[2:]...))
			s.Truncate(2)
			// the written forms are bounded (intervene.MaxFactor); an edit made
			// in code can still overflow: a steering of 10 × 1e38 at layer 2
			far := make([]float32, 32)
			for i := range far {
				far[i] = 1e38
			}
			huge := &intervene.Set{Edits: []intervene.Edit{{Layer: 1, Site: intervene.Resid, Pos: -1, Op: intervene.Add, Factor: 10, Vector: far}}}
			if err := s.SetEdits(huge); err != nil {
				t.Fatal(err)
			}
			_, err := s.Eval(context.Background(), prompt[2:])
			var nf *NonFiniteError
			if !errors.As(err, &nf) || !errors.Is(err, ErrNonFinite) {
				t.Fatalf("error %v, want a NonFiniteError", err)
			}
			if diff := cmp.Diff(NonFiniteError{Layer: 1, After: "mlp", Pos: 2, NaN: false}, *nf); diff != "" {
				t.Errorf("where (-want +got):\n%s\n%v", diff, err)
			}
			if s.Pos() != 2 {
				t.Errorf("the session is at %d after the refused pass, want 2", s.Pos())
			}
			if err := s.SetEdits(nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, eval(t, s, prompt[2:]...)); diff != "" {
				t.Errorf("the pass after the refused one differs from the plain run (-want +got):\n%s", diff)
			}
		})
	}
}

// A model whose weights are finite but large enough to overflow (a hostile
// file: the output norm at 1e38) is refused at its output, in a batch too,
// and no session of the batch advances.
func TestNonFiniteBatchRefused(t *testing.T) {
	m, err := model.Random(model.SynthOptions{Arch: "llama", Embd: 32, Layers: 1, Heads: 2, FFN: 64, Vocab: 600, Context: 32, Type: quant.F32})
	if err != nil {
		t.Fatal(err)
	}
	norm := m.Weights.OutNorm.Data
	for i := 0; i+4 <= len(norm); i += 4 {
		binary.LittleEndian.PutUint32(norm[i:], math.Float32bits(3e38))
	}
	l := loadOn(t, m, "cpu")
	a, b := newSession(t, l, 32), newSession(t, l, 32)
	_, err = a.Eval(context.Background(), []int32{1, 2})
	var nf *NonFiniteError
	if !errors.As(err, &nf) || nf.After != "output" || a.Pos() != 0 {
		t.Fatalf("alone: error %v at position %d, want a NonFiniteError at the output and nothing kept", err, a.Pos())
	}
	err = l.Batch(context.Background(), []BatchItem{{a, []int32{1, 2}}, {b, []int32{3}}}, make([][]float32, 2))
	if !errors.Is(err, ErrNonFinite) || a.Pos() != 0 || b.Pos() != 0 {
		t.Fatalf("batch: error %v, positions %d and %d; want ErrNonFinite and nothing kept", err, a.Pos(), b.Pos())
	}
}

// BenchmarkFinite is the per-pass check of the logits (a vocabulary of
// floats): against a decode step of milliseconds, microseconds.
func BenchmarkFinite(b *testing.B) {
	for _, n := range []int{32000, 151936} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(i%97) - 48
			}
			b.SetBytes(int64(4 * n))
			for b.Loop() {
				if !finite(x) {
					b.Fatal("not finite")
				}
			}
		})
	}
}

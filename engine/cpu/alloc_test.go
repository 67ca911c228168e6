package cpu

import (
	"math/rand/v2"
	"testing"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// A decode step's products allocate nothing once a matrix's derived data
// exist: one vector times a Q8_0 matrix (through its tiles where this
// CPU's kernels take them, which every product then looks up) and an F32
// one, at whatever level STEPTHROUGH_CPU leaves.
func TestDecodeMatMulDoesNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const rows, cols = 256, 512
	p := NewPool(2)
	defer p.Close()
	x := randFloats(r, cols)
	out := make([]float32, rows)
	scratch := [][]float32{make([]float32, ScratchFloats(cols)), make([]float32, ScratchFloats(cols))}
	for _, typ := range []quant.Type{quant.Q8_0, quant.F32} {
		t.Run(typ.String(), func(t *testing.T) {
			data, err := quant.Quantize(typ, randFloats(r, rows*cols))
			if err != nil {
				t.Fatal(err)
			}
			w := &model.Tensor{Name: "w", Type: typ, Dims: []int{cols, rows}, Data: data}
			p.MatMul(out, w, x, 1, scratch) // the first product makes the tiles
			if n := testing.AllocsPerRun(100, func() { p.MatMul(out, w, x, 1, scratch) }); n != 0 {
				t.Errorf("%v allocations per product", n)
			}
		})
	}
}

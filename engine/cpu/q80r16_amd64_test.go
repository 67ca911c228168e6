//go:build !purego

package cpu

import (
	"math/rand/v2"
	"slices"
	"testing"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// repackR16 puts row r's group g of block b at byte 64g+4(r%16) of its
// tile's block, offset by 128, and its d after the groups; repackR8 at
// byte 32g+4(r%8), as it is. The padding rows hold zeros (128 offset)
// and a d of +0.
func TestRepackTiles(t *testing.T) {
	for _, c := range []struct {
		name           string
		repack         func([]byte, int, int) []byte
		tile, bb, step int
		offset         byte
	}{{"R16", repackR16, 16, r16BlockBytes, 64, 0x80}, {"R8", repackR8, 8, r8BlockBytes, 32, 0}} {
		const nb = 3
		rows := c.tile + 5
		r := rand.New(rand.NewPCG(5, 6))
		data, _ := quant.Quantize(quant.Q8_0, randFloats(r, rows*nb*32))
		tiles := c.repack(data, rows, nb)
		if want := 2 * nb * c.bb; len(tiles) != want {
			t.Fatalf("%s: %d bytes, want %d", c.name, len(tiles), want)
		}
		for row := range 2 * c.tile {
			for b := range nb {
				blk := tiles[(row/c.tile*nb+b)*c.bb:][:c.bb]
				d := []byte{0, 0}
				if row < rows {
					d = data[(row*nb+b)*34:][:2]
				}
				if got := blk[8*c.step+2*(row%c.tile):][:2]; !slices.Equal(got, d) {
					t.Errorf("%s row %d block %d: d % x, want % x", c.name, row, b, got, d)
				}
				for i := range 32 {
					want := c.offset
					if row < rows {
						want = data[(row*nb+b)*34+2+i] ^ c.offset
					}
					if got := blk[c.step*(i/4)+4*(row%c.tile)+i%4]; got != want {
						t.Fatalf("%s row %d block %d value %d: %#x, want %#x", c.name, row, b, i, got, want)
					}
				}
			}
		}
	}
}

// Past r16Budget a Q8_0 matrix gets no tiles and several vectors take the
// lane kernel; products that share x where only some matrices have tiles
// run one after the other. Every way, each vector's products are its
// products alone, bit for bit.
func TestQ8_0TilesBudget(t *testing.T) {
	if !useQ80VNNI && !useQ80AVX2 {
		t.Skip("no tiled Q8_0 kernel on this machine")
	}
	const cols, n = 256, 9
	r := rand.New(rand.NewPCG(9, 10))
	var ws []*model.Tensor
	for i := range 3 {
		rows := 40 + 8*i
		raw, _ := quant.Quantize(quant.Q8_0, randFloats(r, rows*cols))
		ws = append(ws, &model.Tensor{Name: "w", Type: quant.Q8_0, Dims: []int{cols, rows}, Data: raw})
	}
	old := r16Budget
	defer func() { r16Budget = old }()
	matrixCache.mu.Lock()
	r16Budget = matrixCache.r16Bytes + 3*cols/32*r16BlockBytes // the first matrix's three tiles of sixteen rows (at AVX2 its five of eight, but not the next's six)
	matrixCache.mu.Unlock()
	pool := NewPool(2)
	defer pool.Close()
	scratch := [][]float32{make([]float32, ScratchFloats(cols)), make([]float32, ScratchFloats(cols))}
	x := randFloats(r, n*cols)
	outs := make([][]float32, len(ws))
	for i, w := range ws {
		outs[i] = make([]float32, n*w.Rows())
	}
	pool.MatMuls(outs, ws, x, n, scratch)
	if q80Tiles(ws[0]) == nil || q80Tiles(ws[1]) != nil || q80Tiles(ws[2]) != nil {
		t.Fatalf("tiles for %v, want only the first within the budget", []bool{q80Tiles(ws[0]) != nil, q80Tiles(ws[1]) != nil, q80Tiles(ws[2]) != nil})
	}
	for i, w := range ws {
		for v := range n {
			alone := make([]float32, w.Rows())
			pool.MatMul(alone, w, x[v*cols:(v+1)*cols], 1, scratch)
			if got := outs[i][v*w.Rows() : (v+1)*w.Rows()]; !slices.Equal(got, alone) {
				t.Errorf("matrix %d vector %d: products beside the others differ from alone", i, v)
			}
		}
	}
}

//go:build !purego

package cpu

import "encoding/binary"

//go:noescape
func dotQ8_0R16v8VNNI(w *byte, blocks int, x *uint32, out *float32, ostride int, lanes int)

//go:noescape
func dotQ8_0R16v1VNNI(w *byte, blocks int, x *uint32, out *float32)

// r16BlockBytes is one block of a tile of sixteen Q8_0 rows as
// repackR16 lays it out: the size of the sixteen rows' blocks.
const r16BlockBytes = 16 * 34

// repackR16 lays out a Q8_0 matrix (rows of nb blocks) in tiles of
// sixteen rows, the last padded with zero rows: per block, for each of
// its eight groups of four values the sixteen rows' four as unsigned
// bytes w+128 (64 bytes, row i's at 4i), then the sixteen rows' d
// (binary16). dotQ8_0R16v8VNNI then multiplies a group of all sixteen
// rows by a vector's group in one instruction, the vector's four values
// broadcast from memory, where the lane kernel broadcasts a row's.
func repackR16(data []byte, rows, nb int) []byte {
	return repackTiles(data, rows, nb, 16, r16BlockBytes, fillR16)
}

// fillR16 writes tiles [t0, t1) of repackR16's copy into out, a tile's
// blocks in order.
func fillR16(out, data []byte, rows, nb, t0, t1 int) {
	for t := t0; t < t1; t++ {
		for b := range nb {
			blk := out[(t*nb+b)*r16BlockBytes:][:r16BlockBytes]
			for i := range 16 {
				r := 16*t + i
				if r >= rows { // a padding row: values 0+128, d +0
					for g := range 8 {
						binary.LittleEndian.PutUint32(blk[64*g+4*i:], 0x80808080)
					}
					blk[512+2*i], blk[513+2*i] = 0, 0
					continue
				}
				src := data[(r*nb+b)*34:][:34]
				for g := range 8 {
					binary.LittleEndian.PutUint32(blk[64*g+4*i:], binary.LittleEndian.Uint32(src[2+4*g:])^0x80808080)
				}
				blk[512+2*i], blk[513+2*i] = src[0], src[1]
			}
		}
	}
}

// r16Rows is rows [lo, hi) of a Q8_0 matrix in tiles (repackR16) times n
// vectors laid out by layR16Block, eight at a time: row r's results go to
// out[v*rows+r]. A tile the range holds whole (and the matrix fills) goes
// straight into out; one it cuts is computed whole into scratch (at least
// 128 floats), the range's rows copied from there.
func r16Rows(tiles []byte, lo, hi int, z *q80, n, nb int, out []float32, rows int, scratch []float32) {
	tb := nb * r16BlockBytes
	_ = tiles[(hi+15)/16*tb-1]
	_ = z.lay[(n+7)/8*z.layWords-1]
	_ = out[(n-1)*rows+hi-1]
	tmp := scratch[:128]
	for t := lo / 16; 16*t < hi; t++ {
		r0 := 16 * t
		whole := r0 >= lo && r0+16 <= hi
		if n == 1 { // one vector: its own kernel, the same results
			if whole {
				dotQ8_0R16v1VNNI(&tiles[t*tb], nb, &z.lay[0], &out[r0])
				continue
			}
			dotQ8_0R16v1VNNI(&tiles[t*tb], nb, &z.lay[0], &tmp[0])
			copy(out[max(r0, lo):min(r0+16, hi)], tmp[max(r0, lo)-r0:min(r0+16, hi)-r0])
			continue
		}
		for g := 0; g < n; g += 8 {
			lanes := min(8, n-g)
			x := &z.lay[g/8*z.layWords]
			if whole {
				dotQ8_0R16v8VNNI(&tiles[t*tb], nb, x, &out[g*rows+r0], 4*rows, lanes)
				continue
			}
			dotQ8_0R16v8VNNI(&tiles[t*tb], nb, x, &tmp[0], 64, lanes)
			for v := range lanes {
				for r := max(r0, lo); r < min(r0+16, hi); r++ {
					out[(g+v)*rows+r] = tmp[16*v+r-r0]
				}
			}
		}
	}
}

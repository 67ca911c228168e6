//go:build !purego

package cpu

//go:noescape
func dotQ8_0R8v8AVX2(w *byte, blocks int, x *int8, xstride int, d *float32, dstride int, out *float32, ostride int, lanes int)

//go:noescape
func dotQ8_0R8v1AVX2(w *byte, blocks int, x *int8, d *float32, out *float32)

// r8BlockBytes is one block of a tile of eight Q8_0 rows as repackR8 lays
// it out: the size of the eight rows' blocks.
const r8BlockBytes = 8 * 34

// repackR8 lays out a Q8_0 matrix (rows of nb blocks) in tiles of eight
// rows for the AVX2 kernel, the last padded with zero rows: per block,
// for each of its eight groups of four values the eight rows' four
// (32 bytes, row i's at 4i), then the eight rows' d (binary16).
// dotQ8_0R8v8AVX2 then takes a group of all eight rows with one load and
// meets each vector's group broadcast, the rows' sums in separate lanes.
func repackR8(data []byte, rows, nb int) []byte {
	return repackTiles(data, rows, nb, 8, r8BlockBytes, fillR8)
}

// fillR8 writes tiles [t0, t1) of repackR8's copy into out (zeroed: the
// padding rows' values and d), a tile's blocks in order.
func fillR8(out, data []byte, rows, nb, t0, t1 int) {
	for t := t0; t < t1; t++ {
		for b := range nb {
			blk := out[(t*nb+b)*r8BlockBytes:][:r8BlockBytes]
			for i := range min(8, rows-8*t) {
				src := data[((8*t+i)*nb+b)*34:][:34]
				for g := range 8 {
					copy(blk[32*g+4*i:][:4], src[2+4*g:])
				}
				blk[256+2*i], blk[257+2*i] = src[0], src[1]
			}
		}
	}
}

// r8Rows is rows [lo, hi) of a Q8_0 matrix in tiles (repackR8) times n
// rounded vectors read in place (z sized for whole groups of eight),
// eight at a time: row r's results go to out[v*rows+r]. A tile the range
// holds whole (and the matrix fills) goes straight into out; one it cuts
// is computed whole into scratch (at least 64 floats), the range's rows
// copied from there.
func r8Rows(tiles []byte, lo, hi int, z *q80, n, nb int, out []float32, rows int, scratch []float32) {
	tb := nb * r8BlockBytes
	cols := 32 * nb
	groups := (n + 7) / 8
	q, d := z.q[:groups*8*cols], z.d[:groups*8*nb]
	_ = tiles[(hi+7)/8*tb-1]
	_ = out[(n-1)*rows+hi-1]
	tmp := scratch[:64]
	for t := lo / 8; 8*t < hi; t++ {
		r0 := 8 * t
		whole := r0 >= lo && r0+8 <= hi
		if n == 1 { // one vector: its own kernel, the same results
			if whole {
				dotQ8_0R8v1AVX2(&tiles[t*tb], nb, &q[0], &d[0], &out[r0])
				continue
			}
			dotQ8_0R8v1AVX2(&tiles[t*tb], nb, &q[0], &d[0], &tmp[0])
			copy(out[max(r0, lo):min(r0+8, hi)], tmp[max(r0, lo)-r0:min(r0+8, hi)-r0])
			continue
		}
		for g := range groups {
			lanes := min(8, n-8*g)
			x, dx := &q[8*g*cols], &d[8*g*nb]
			if whole {
				dotQ8_0R8v8AVX2(&tiles[t*tb], nb, x, cols, dx, 4*nb, &out[8*g*rows+r0], 4*rows, lanes)
				continue
			}
			dotQ8_0R8v8AVX2(&tiles[t*tb], nb, x, cols, dx, 4*nb, &tmp[0], 32, lanes)
			for v := range lanes {
				for r := max(r0, lo); r < min(r0+8, hi); r++ {
					out[(8*g+v)*rows+r] = tmp[8*v+r-r0]
				}
			}
		}
	}
}

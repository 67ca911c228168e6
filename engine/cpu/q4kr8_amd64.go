//go:build !purego

package cpu

import (
	"encoding/binary"

	"stepthrough/engine/quant"
)

//go:noescape
func dotQ4_KR8v8AVX2(w *byte, blocks int, q *int8, qstride int, bs *int16, bstride int, d *float32, dstride int, out *float32, ostride int, lanes int)

// kR8Kernel is a K-quant tile kernel (dotQ4_KR8v8AVX2).
type kR8Kernel func(w *byte, blocks int, q *int8, qstride int, bs *int16, bstride int, d *float32, dstride int, out *float32, ostride int, lanes int)

// kR8 are the K-quant tile kernels by type, with their tiles' block bytes
// and repackers. Q6_K has none: the same design for it (values a byte
// each, two groups' products added in 16 bits) measured slower than the
// kernel over the matrix (one thread, 2048 × 768 × 8, best of six: 188
// µs against 161), its four times as many broadcasts of x per value
// outweighing what the tiles save.
var kR8 = map[quant.Type]struct {
	fn     kR8Kernel
	bb     int
	repack func(data []byte, rows, nb int) []byte
}{
	quant.Q4_K: {dotQ4_KR8v8AVX2, q4kR8BlockBytes, repackQ4KR8},
}

// q4kR8BlockBytes is one block of a tile of eight Q4_K rows as
// repackQ4KR8 lays it out.
const q4kR8BlockBytes = 1024 + 256 + 256 + 32

// repackQ4KR8 lays out a Q4_K matrix (rows of nb blocks) in tiles of
// eight rows for dotQ4_KR8v8AVX2, the last padded with zero rows. Per
// block: for each sub-block j and k < 4, 32 bytes at 128j+32k whose byte
// 4r+i holds value 4k+i of row r's sub-block in its low nibble and value
// 16+4k+i in its high one; then per sub-block the rows' scales as int16,
// row r's twice (lanes 2r and 2r+1, 32 bytes at 1024+32j), the same of
// their mins (1280+32j), and the rows' d and dmin (binary16, 1536 and
// 1552). The tile is 36 % larger than the rows (scales and mins spread
// out for the kernel's VPMADDWD).
func repackQ4KR8(data []byte, rows, nb int) []byte {
	return repackTiles(data, rows, nb, 8, q4kR8BlockBytes, fillQ4KR8)
}

// fillQ4KR8 writes tiles [t0, t1) of repackQ4KR8's copy into out (zeroed:
// the padding rows' values, scales and d).
func fillQ4KR8(out, data []byte, rows, nb, t0, t1 int) {
	for r := 8 * t0; r < min(rows, 8*t1); r++ {
		for b := range nb {
			src := data[(r*nb+b)*144:][:144]
			blk := out[(r/8*nb+b)*q4kR8BlockBytes:][:q4kR8BlockBytes]
			i8 := r % 8
			sc, mn := scalesK4(src[4:16])
			for j := range 8 {
				for k := range 4 {
					for i := range 4 {
						lo := q4KValue(src, j, 4*k+i)
						hi := q4KValue(src, j, 16+4*k+i)
						blk[128*j+32*k+4*i8+i] = lo | hi<<4
					}
				}
				for h := range 2 {
					binary.LittleEndian.PutUint16(blk[1024+32*j+4*i8+2*h:], uint16(sc[j]))
					binary.LittleEndian.PutUint16(blk[1280+32*j+4*i8+2*h:], uint16(mn[j]))
				}
			}
			copy(blk[1536+2*i8:][:2], src[0:2])
			copy(blk[1552+2*i8:][:2], src[2:4])
		}
	}
}

// q4KValue is value i (0–31) of sub-block j of the Q4_K block blk: the
// low nibbles of pair j/2's 32 bytes for an even j, the high ones for an
// odd one.
func q4KValue(blk []byte, j, i int) byte {
	return blk[16+32*(j/2)+i] >> (4 * (j % 2)) & 15
}

// kR8Rows is rows [lo, hi) of a K-quant matrix in tiles (kR8[t])
// times n quantized vectors read in place (z sized for whole groups of
// eight), eight at a time: row r's results go to out[v*rows+r]. A tile
// the range holds whole goes straight into out; one it cuts is computed
// whole into tmp, the range's rows copied from there.
func kR8Rows(t quant.Type, tiles []byte, lo, hi int, z *q8K, n, nb int, out []float32, rows int) {
	k := kR8[t]
	tb := nb * k.bb
	groups := (n + 7) / 8
	q, bs, d := z.q[:groups*8*nb*256], z.bs[:groups*8*nb*16], z.d[:groups*8*nb]
	_ = tiles[(hi+7)/8*tb-1]
	_ = out[(n-1)*rows+hi-1]
	var tmp [64]float32
	for t := lo / 8; 8*t < hi; t++ {
		r0 := 8 * t
		whole := r0 >= lo && r0+8 <= hi
		for g := range groups {
			lanes := min(8, n-8*g)
			v0 := 8 * g
			if whole {
				k.fn(&tiles[t*tb], nb, &q[v0*nb*256], nb*256, &bs[v0*nb*16], nb*32, &d[v0*nb], nb*4, &out[v0*rows+r0], 4*rows, lanes)
				continue
			}
			k.fn(&tiles[t*tb], nb, &q[v0*nb*256], nb*256, &bs[v0*nb*16], nb*32, &d[v0*nb], nb*4, &tmp[0], 32, lanes)
			for v := range lanes {
				for r := max(r0, lo); r < min(r0+8, hi); r++ {
					out[(v0+v)*rows+r] = tmp[8*v+r-r0]
				}
			}
		}
	}
}

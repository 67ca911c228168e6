//go:build !purego

package cpu

import (
	"encoding/binary"
	"runtime"
	"sync"
	"unsafe"
	"weak"

	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// matrixCache holds what the kernels for several vectors at once derive
// from a loaded matrix's weights, computed on first use (they do not
// change) and dropped with the matrix:
//   - the block corrections of Q4_K, Q6_K (and, past the tile budget,
//     Q8_0) matrices: what the offset of 128 on the vectors' side adds to
//     a block's integer sums in the lane kernels (dotQ8_0Q80v8r4VNNI,
//     dotQ4_KQ8v8r4VNNI, dotQ6_KQ8v8r4VNNI), which start each block's sums
//     from it (4 bytes per block: 12 % of a Q8_0 matrix, 3 % of a Q4_K
//     one, 2 % of a Q6_K one);
//   - Q8_0 matrices in tiles of sixteen rows (repackR16), a copy the size
//     of the matrix, while all copies fit r16Budget. Every product with
//     the matrix then reads the tiles, one vector's too, and the OS is
//     told the matrix's own bytes can leave memory (pageOut), so a model
//     takes about its file's size, not twice that.
var matrixCache struct {
	mu       sync.Mutex
	m        map[weak.Pointer[model.Tensor]]*matrixAux
	r16Bytes int // the tiled copies' bytes
}

// matrixAux is what matrixCache holds for one matrix, and the bytes it
// was computed from.
type matrixAux struct {
	data    *byte
	n       int
	sums    []int32
	tiles   []byte
	untiled bool // refused tiles: over the budget
}

// r16Budget bounds the bytes of all Q8_0 matrices' tiled copies (1 GiB);
// beyond it, several vectors take the lane kernel over the matrix itself.
// A variable for tests.
var r16Budget = 1 << 30

// auxOf returns w's entry, new when w has none or its bytes were
// replaced (matrixCache.mu held).
func auxOf(w *model.Tensor) *matrixAux {
	k := weak.Make(w)
	a, had := matrixCache.m[k]
	if had && a.data == unsafe.SliceData(w.Data) && a.n == len(w.Data) {
		return a
	}
	if had {
		matrixCache.r16Bytes -= len(a.tiles)
	}
	a = &matrixAux{data: unsafe.SliceData(w.Data), n: len(w.Data)}
	if matrixCache.m == nil {
		matrixCache.m = map[weak.Pointer[model.Tensor]]*matrixAux{}
	}
	matrixCache.m[k] = a
	if !had {
		runtime.AddCleanup(w, func(k weak.Pointer[model.Tensor]) {
			matrixCache.mu.Lock()
			defer matrixCache.mu.Unlock()
			if a := matrixCache.m[k]; a != nil {
				matrixCache.r16Bytes -= len(a.tiles)
			}
			delete(matrixCache.m, k)
		}, k)
	}
	return a
}

// blockSums returns w's block corrections as its lane kernel reads them
// (Q8_0: q80BlockSums; Q4_K, Q6_K: kBlockSums).
func blockSums(w *model.Tensor) []int32 {
	matrixCache.mu.Lock()
	defer matrixCache.mu.Unlock()
	a := auxOf(w)
	if a.sums == nil {
		a.sums = sumsOf(w)
	}
	return a.sums
}

// q80Tiles returns the Q8_0 matrix w in tiles of sixteen rows
// (repackR16) for dotQ8_0R16v8VNNI, or at AVX2 of eight (repackR8) for
// dotQ8_0R8v8AVX2, or nil: neither kernel runs here, or the copy would
// take the tiled copies past r16Budget.
func q80Tiles(w *model.Tensor) []byte {
	if !(useQ80VNNI || useQ80AVX2) || w.Type != quant.Q8_0 || w.Cols()%32 != 0 {
		return nil
	}
	if useQ80VNNI {
		return tilesOf(w, 16, 32, r16BlockBytes, repackR16)
	}
	return tilesOf(w, 8, 32, r8BlockBytes, repackR8)
}

// kTiles returns the K-quant matrix w in tiles of eight rows (kR8:
// repackQ4KR8) for the AVX2 tile kernels, where they take
// several vectors, or nil: elsewhere, or past r16Budget (the kernel over
// the matrix then gives the same results).
func kTiles(w *model.Tensor) []byte {
	k, ok := kR8[w.Type]
	if !useKQ8AVX2 || !ok || w.Cols()%256 != 0 {
		return nil
	}
	return tilesOf(w, 8, 256, k.bb, k.repack)
}

// tilesOf returns w's tiled copy (tiles of tile rows, blocks of bv
// values, bb bytes a tile's block), made by repack on first use, or nil
// past r16Budget.
func tilesOf(w *model.Tensor, tile, bv, bb int, repack func(data []byte, rows, nb int) []byte) []byte {
	matrixCache.mu.Lock()
	defer matrixCache.mu.Unlock()
	a := auxOf(w)
	if a.tiles == nil && !a.untiled {
		rows, nb := w.Rows(), w.Cols()/bv
		if size := (rows + tile - 1) / tile * nb * bb; matrixCache.r16Bytes+size > r16Budget {
			a.untiled = true
		} else {
			a.tiles = repack(w.Data, rows, nb)
			matrixCache.r16Bytes += size
			pageOut(w.Data) // the kernels read the tiles from now on
		}
	}
	return a.tiles
}

// repackTiles makes a matrix's tiled copy (rows of nb blocks, tiles of
// tile rows, bb bytes a tile's block): fill writes tiles [t0, t1) into
// the zeroed copy, the tiles shared out among the CPUs (a 600 MB model's
// copies are made once, on their matrices' first products).
func repackTiles(data []byte, rows, nb, tile, bb int, fill func(out, data []byte, rows, nb, t0, t1 int)) []byte {
	tiles := (rows + tile - 1) / tile
	out := make([]byte, tiles*nb*bb)
	parts := max(1, min(runtime.GOMAXPROCS(0), tiles/64))
	var wg sync.WaitGroup
	for p := range parts {
		t0, t1 := tiles*p/parts, tiles*(p+1)/parts
		wg.Go(func() { fill(out, data, rows, nb, t0, t1) })
	}
	wg.Wait()
	return out
}

// sumsOf computes w's block corrections.
func sumsOf(w *model.Tensor) []int32 {
	switch w.Type {
	case quant.Q4_K, quant.Q6_K:
		return kBlockSums(w.Type, w.Data, w.Rows(), w.Cols()/256)
	}
	return q80BlockSums(w.Data, w.Rows(), w.Cols()/32)
}

// kBlockSums is −128·Σ_s sc_s·(Σ q over sub-block s) of each block of
// rows of nb Q4_K or Q6_K blocks, in the order the lane kernels read
// them: for each four rows from a multiple of four, block by block, the
// four rows' side by side (row r's block b at ((r/4)·nb + b)·4 + r%4),
// and four more after the last, so that a kernel running one row as four
// (from row r's place) stays inside.
func kBlockSums(t quant.Type, data []byte, rows, nb int) []int32 {
	sums := make([]int32, (rows+3)/4*4*nb+4)
	for r := range rows {
		for b := range nb {
			var s int32
			if t == quant.Q6_K {
				s = q6KSums((*[210]byte)(data[(r*nb+b)*210:]))
			} else {
				s = q4KSums((*[144]byte)(data[(r*nb+b)*144:]))
			}
			sums[(r/4*nb+b)*4+r%4] = -128 * s
		}
	}
	return sums
}

// nibbles masks the low four bits of each byte of a word.
const nibbles = 0x0f0f0f0f0f0f0f0f

// byteSum is the sum of a word's eight bytes (at most 255 in all).
func byteSum(w uint64) int32 { return int32(w * 0x0101010101010101 >> 56) }

// q4KSums is Σ_j sc_j·(Σ q over sub-block j) of a Q4_K block: q4KScaled
// with every qx 1, eight values a word.
func q4KSums(blk *[144]byte) int32 {
	sc, _ := scalesK4(blk[4:16])
	var s int32
	for p := range 4 {
		w := blk[16+32*p:]
		w0, w1 := binary.LittleEndian.Uint64(w), binary.LittleEndian.Uint64(w[8:])
		w2, w3 := binary.LittleEndian.Uint64(w[16:]), binary.LittleEndian.Uint64(w[24:])
		lo := byteSum(w0&nibbles+w1&nibbles) + byteSum(w2&nibbles+w3&nibbles)
		hi := byteSum(w0>>4&nibbles+w1>>4&nibbles) + byteSum(w2>>4&nibbles+w3>>4&nibbles)
		s += int32(sc[2*p])*lo + int32(sc[2*p+1])*hi
	}
	return s
}

// q6KSums is Σ_s sc_s·(Σ q over sub-block s) of a Q6_K block, q the
// six-bit values: q6KScaled with every qx 1, eight values a word.
func q6KSums(blk *[210]byte) int32 {
	var s int32
	for n := range 2 {
		for g := range 4 {
			for h := range 2 { // sub-block 2g+h of half n: values 16h..16h+15 of the 32
				ql := blk[64*n+32*(g%2)+16*h:]
				qh := blk[128+32*n+16*h:]
				shift := uint(4 * (g / 2))
				lo := byteSum(binary.LittleEndian.Uint64(ql)>>shift&nibbles + binary.LittleEndian.Uint64(ql[8:])>>shift&nibbles)
				const two = 0x0303030303030303
				hi := byteSum(binary.LittleEndian.Uint64(qh)>>(2*g)&two + binary.LittleEndian.Uint64(qh[8:])>>(2*g)&two)
				s += int32(int8(blk[192+8*n+2*g+h])) * (lo + 16*hi)
			}
		}
	}
	return s
}

// q80BlockSums is −128·Σ of each block's values for rows of nb Q8_0
// blocks: sums[r·nb+b].
// nil when the CPU has no kernel that reads them (no AVX-512 VNNI).
func q80BlockSums(data []byte, rows, nb int) []int32 {
	if !useQ80VNNI {
		return nil
	}
	sums := make([]int32, rows*nb)
	blockSumsInto(data, rows, nb, sums, make([]int32, 4*nb))
	return sums
}

// blockSumsInto is q80BlockSums into sums (rows·nb), four rows at a time
// through four (4·nb).
func blockSumsInto(data []byte, rows, nb int, sums, four []int32) {
	if rows == 0 || nb == 0 {
		return
	}
	rb := 34 * nb
	_ = data[rows*rb-1]
	_, _ = sums[rows*nb-1], four[4*nb-1]
	for r := 0; r < rows; r += 4 {
		if r+4 <= rows { // four rows: row r+i's sums in lane i
			sumsQ8_0VNNI(&data[r*rb], rb, nb, &four[0])
			for i := range 4 {
				for b := range nb {
					sums[(r+i)*nb+b] = four[4*b+i]
				}
			}
			continue
		}
		for i := r; i < rows; i++ { // the rest one at a time: the same row four times
			sumsQ8_0VNNI(&data[i*rb], 0, nb, &four[0])
			for b := range nb {
				sums[i*nb+b] = four[4*b]
			}
		}
	}
}

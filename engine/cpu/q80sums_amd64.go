//go:build !purego

package cpu

import (
	"runtime"
	"sync"
	"unsafe"
	"weak"

	"stepthrough/engine/model"
)

// q80Sums holds, for each Q8_0 matrix that several vectors at once have
// multiplied here, its block corrections (what dotQ8_0Q80v8r4VNNI starts
// each block's sums from): computed once, since a loaded matrix's
// weights do not change (4 bytes per 34-byte block), and dropped with
// the matrix.
var q80Sums struct {
	mu sync.Mutex
	m  map[weak.Pointer[model.Tensor]]q80SumsOf
}

// q80SumsOf is one matrix's corrections and the bytes they were computed
// from.
type q80SumsOf struct {
	data *byte
	n    int
	sums []int32
}

// blockSums returns w's block corrections, rows × blocks, computing them
// on first use (or when w's bytes were replaced).
func blockSums(w *model.Tensor) []int32 {
	k := weak.Make(w)
	q80Sums.mu.Lock()
	defer q80Sums.mu.Unlock()
	s, had := q80Sums.m[k]
	if had && s.data == unsafe.SliceData(w.Data) && s.n == len(w.Data) {
		return s.sums
	}
	s = q80SumsOf{data: unsafe.SliceData(w.Data), n: len(w.Data), sums: q80BlockSums(w.Data, w.Rows(), w.Cols()/32)}
	if q80Sums.m == nil {
		q80Sums.m = map[weak.Pointer[model.Tensor]]q80SumsOf{}
	}
	q80Sums.m[k] = s
	if !had {
		runtime.AddCleanup(w, func(k weak.Pointer[model.Tensor]) {
			q80Sums.mu.Lock()
			defer q80Sums.mu.Unlock()
			delete(q80Sums.m, k)
		}, k)
	}
	return s.sums
}

// q80BlockSums is −128·Σ of each block's values for rows of nb Q8_0
// blocks: sums[r·nb+b].
func q80BlockSums(data []byte, rows, nb int) []int32 {
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

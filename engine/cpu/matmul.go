package cpu

import (
	"stepthrough/engine/model"
	"stepthrough/engine/quant"
)

// minWorkPerPart is the least multiply-adds a thread is given: below it,
// waking another thread costs more than it saves (measured on 2 and 16
// cores).
const minWorkPerPart = 32 << 10

// ScratchFloats is how many floats of per-worker scratch MatMul needs for a
// matrix of the given row length.
func ScratchFloats(cols int) int { return 4 * cols }

// matmulTask is one MatMul split by rows across workers.
type matmulTask struct {
	out, x  []float32
	w       *model.Tensor
	n       int
	scratch [][]float32
	xs      []float32 // the legacy kernels' sums of x over groups (kGroup), per vector
	z       *q8K      // x quantized to int8 for the K-quant kernels
	z80     *q80      // x rounded to Q8_0 for the Q4_0, Q5_0 and Q8_0 kernels
	sums    []int32   // w's block corrections, for several vectors through the lane kernels (blockSums)
	tiles   []byte    // w in tiles, for several vectors through the tile kernels (q80Tiles, kTiles)
}

// hasQ8Kernel reports whether a type multiplies int8-quantized x (q8K).
func hasQ8Kernel(t quant.Type, cols int) bool {
	return (t == quant.Q4_K || t == quant.Q5_K || t == quant.Q6_K) && cols%256 == 0
}

// kGroup is how many values of x a legacy 4- or 5-bit kernel sums for
// its offsets or mins (0: not such a type).
func kGroup(t quant.Type) int {
	switch t {
	case quant.Q4_0, quant.Q5_0, quant.Q4_1, quant.Q5_1:
		return 32
	}
	return 0
}

// dotK is a legacy-type row times vector t of the task.
func (m *matmulTask) dotK(row []byte, t int) float32 {
	cols := m.w.Cols()
	g := kGroup(m.w.Type)
	return dotLegacy(m.w.Type, row, m.x[t*cols:(t+1)*cols], m.xs[t*cols/g:(t+1)*cols/g])
}

// MatMul computes out[t][r] = dot(row r of w, x[t]) for n input vectors.
// x is n×w.Cols(), out is n×w.Rows(); scratch holds ScratchFloats(cols)
// floats per worker. Rows are split across workers; for n > 1 each group of
// three rows is decoded once and multiplied with three vectors at a time.
func (p *Pool) MatMul(out []float32, w *model.Tensor, x []float32, n int, scratch [][]float32) {
	p.prepare(out, w, x, n, scratch)
	if p.gemm() {
		x := p.mm.x // K-quant types: x rounded as their kernel rounds it
		p.mm = matmulTask{}
		p.matMulGemm(out, w, x, n)
		return
	}
	// a part must hold enough multiply-adds to be worth waking a thread
	grain := max(16, minWorkPerPart/(w.Cols()*n))
	p.Run(w.Rows(), grain, &p.mm)
	p.mm = matmulTask{}
}

// gemm reports whether the product p.mm is set up for goes through the
// GEMM: several vectors and no int8 kernel for them.
func (p *Pool) gemm() bool {
	return useGemm && p.mm.n >= gemmMinVectors && p.mm.z == nil && p.mm.z80 == nil && p.mm.xs == nil
}

// prepare sets p.mm up for a product: x quantized for the K-quant
// kernels, or its group sums for the legacy ones.
func (p *Pool) prepare(out []float32, w *model.Tensor, x []float32, n int, scratch [][]float32) {
	p.mm = matmulTask{out: out, x: x, w: w, n: n, scratch: scratch}
	if hasQ8Kernel(w.Type, w.Cols()) {
		p.quantizeX(x[:n*w.Cols()], n, w.Cols())
		p.mm.z = &p.q8
		decoded := kq8Decoded(w.Type, n)
		if n > 1 && !decoded && kq8Lanes(w.Type) {
			p.layX(n, w.Cols())
			if useKQ8Lanes { // the AVX2 kernels need no corrections
				p.mm.sums = blockSums(w)
			}
			p.mm.tiles = kTiles(w)
		}
		if decoded {
			// many vectors: decoded rows through the tile kernels, with x
			// rounded to the same 8 bits, so a vector's products are the
			// int8 kernel's (up to float summation order) whatever the batch
			p.roundX(n, w.Cols())
			p.mm.x, p.mm.z = p.xr[:n*w.Cols()], nil
		}
	} else if cols := w.Cols(); hasQ80Kernel(w.Type, cols) {
		var back []float32
		if p.q80Decoded(w.Type, n) {
			// many vectors: decoded rows through the tile kernels with x
			// rounded as the kernel rounds it, so a vector's products are
			// the int8 kernel's (up to float summation order) whatever the batch
			p.xr80 = grow(p.xr80, n*cols)
			back = p.xr80
		}
		lay := back == nil && q80Lays(w.Type) && (n > 1 || useQ80VNNI) // the AVX2 kernels read one vector as rounded
		var tiles []byte
		if back == nil && q80Lays(w.Type) {
			// every product with a tiled matrix reads the tiles, one
			// vector's too, so the bytes they were copied from are left
			// alone (q80Tiles lets the OS drop them from memory)
			tiles = q80Tiles(w)
		}
		if tiles != nil && !useQ80VNNI {
			lay = false // the AVX2 tile kernel reads the rounded vectors in place
		}
		p.q80.tiled = tiles != nil
		p.q80.resize(n, cols, lay)
		p.q80t = q80Task{z: &p.q80, x: x[:n*cols], back: back, n: n, cols: cols, lay: lay}
		items, grain := p.q80t.items()
		p.Run(items, grain, &p.q80t)
		p.q80t = q80Task{}
		if back == nil {
			p.mm.z80 = &p.q80
			if tiles != nil {
				p.mm.tiles = tiles
			} else if lay && n > 1 && w.Type == quant.Q8_0 && useQ80VNNI { // Q4_0 and Q5_0 rows get theirs a tile at a time
				p.mm.sums = blockSums(w)
			}
		} else {
			p.mm.x = back
		}
	} else if g := kGroup(w.Type); g > 0 && n <= kSmallBatch && w.Cols()%g == 0 {
		cols := w.Cols()
		if cap(p.xs) < n*cols/g {
			p.xs = make([]float32, n*cols/g)
		}
		p.mm.xs = p.xs[:n*cols/g]
		for t := range n {
			xSums(x[t*cols:(t+1)*cols], g, p.mm.xs[t*cols/g:(t+1)*cols/g])
		}
	}
}

func (m *matmulTask) Run(worker, lo, hi int) {
	w := m.w
	rows, cols, rb := w.Rows(), w.Cols(), w.RowBytes()
	buf := m.scratch[worker][:4*cols]
	if m.z != nil { // Q4_K, Q6_K: every vector through the int8 kernel
		nb := cols / 256
		if m.n == 1 {
			dotRowsKQ8(w.Type, w.Data, rb, lo, hi, m.z, m.out)
			return
		}
		dotRowsKQ8Multi(w.Type, w.Data, rb, lo, hi, m.z, m.n, nb, m.out, rows, m.sums, m.tiles)
		return
	}
	if m.z80 != nil { // Q4_0, Q5_0, Q8_0: every vector through the int8 kernel
		dotRowsQ80(w.Type, w.Data, rb, lo, hi, m.z80, m.n, cols, m.out, rows, m.sums, m.tiles, buf)
		return
	}
	if m.n == 1 {
		x := m.x[:cols]
		r := lo
		if w.Type == quant.F32 && hostLittleEndian {
			all := f32s(w.Data)
			var o8 [8]float32
			for ; r+8 <= hi && gemv8(all[r*cols:(r+8)*cols], cols, x, &o8); r += 8 {
				copy(m.out[r:r+8], o8[:])
			}
			var o4 [4]float32
			for ; r+4 <= hi; r += 4 {
				gemv4(all[r*cols:(r+4)*cols], cols, x, &o4)
				copy(m.out[r:r+4], o4[:])
			}
		}
		if m.xs != nil {
			dotRowsK(w.Type, w.Data, rb, r, hi, x, m.xs, m.out)
			return
		}
		for ; r < hi; r++ {
			m.out[r] = dotRow(w.Type, w.Data[r*rb:(r+1)*rb], x, buf[:cols])
		}
		return
	}
	if m.xs != nil { // a few vectors: the K-quant kernel per vector
		for r := lo; r < hi; r++ {
			row := w.Data[r*rb : (r+1)*rb]
			for t := range m.n {
				m.out[t*rows+r] = m.dotK(row, t)
			}
		}
		return
	}
	R := 3 // rows (and vectors) per tile
	if hasTile4 {
		R = 4
	}
	var o9 [9]float32
	var o16 [16]float32
	var padded []float32 // 2 or 3 F32 vectors padded to a tile's 4 (the rows stream from memory once)
	if hasTile4 && m.n < 4 && w.Type == quant.F32 && hostLittleEndian {
		padded = buf[:4*cols]
		for j := range 4 {
			copy(padded[j*cols:(j+1)*cols], m.x[min(j, m.n-1)*cols:])
		}
	}
	for r := lo; r < hi; r += R {
		nr := min(R, hi-r)
		var a []float32
		if w.Type == quant.F32 && hostLittleEndian {
			a = f32s(w.Data[r*rb : (r+nr)*rb])
		} else {
			a = buf[:nr*cols]
			for i := 0; i < nr; i++ {
				decodeRowInto(w.Type, w.Data[(r+i)*rb:(r+i+1)*rb], a[i*cols:(i+1)*cols])
			}
		}
		t := 0
		if padded != nil && nr == 4 {
			gemm4x4(a, cols, padded, cols, cols, &o16)
			for i := range 4 {
				for j := range m.n {
					m.out[j*rows+r+i] = o16[i*4+j]
				}
			}
			t = m.n
		}
		for ; nr == R && t+R <= m.n; t += R {
			if R == 4 {
				gemm4x4(a, cols, m.x[t*cols:], cols, cols, &o16)
				for i := 0; i < 4; i++ {
					for j := 0; j < 4; j++ {
						m.out[(t+j)*rows+r+i] = o16[i*4+j]
					}
				}
			} else {
				gemm3x3(a, cols, m.x[t*cols:], cols, cols, &o9)
				for i := 0; i < 3; i++ {
					for j := 0; j < 3; j++ {
						m.out[(t+j)*rows+r+i] = o9[i*3+j]
					}
				}
			}
		}
		for ; t < m.n; t++ {
			xt := m.x[t*cols : (t+1)*cols]
			if nr == 4 {
				var o4 [4]float32
				gemv4(a, cols, xt, &o4)
				for i := range 4 {
					m.out[t*rows+r+i] = o4[i]
				}
				continue
			}
			for i := 0; i < nr; i++ {
				m.out[t*rows+r+i] = dot(a[i*cols:(i+1)*cols], xt)
			}
		}
	}
}

// kQ8SmallBatch is the same for the K-quant int8 kernels that take one
// vector at a time (Q5_K; Q4_K and Q6_K without AVX-512 VNNI); past it
// their products use decoded rows with x rounded as the kernel rounds it.
// Measured with the four-vector kernels that preceded the lane ones, 2048
// × 768 through MatMul (BenchmarkKQ8Paths): Q4_K 0.11 ms against 0.17
// decoded at 8 vectors, 0.21 against 0.27 at 16, 0.48 against 0.37 at 32;
// Q6_K 0.12 against 0.19 at 8, level at 16, behind at 32. One vector at a
// time: level at 8, 2.42 ms against 1.67 decoded at 16 for 16,384 × 768.
// (A variable for that benchmark.)
var kQ8SmallBatch = func() int {
	if useKQ8Lanes {
		return 16
	}
	return 8
}()

// kq8Decoded reports whether a K-quant product of n vectors takes decoded
// rows through the GEMM rather than the int8 kernels. The lane kernels
// never do unless a benchmark asks (kQ8SmallBatch = 0): 2048 × 768
// through MatMul (BenchmarkKQ8Paths, two runs) took, for Q4_K, 0.09–0.11
// ms against 0.28–0.30 decoded at 8 vectors, 0.37–0.41 against 0.61–0.62
// at 32 and 0.74–0.78 against 1.15–1.25 at 64; for Q6_K 0.11–0.17 against
// 0.34–0.49 at 8 and 0.84–1.06 against 1.27–1.61 at 64.
func kq8Decoded(t quant.Type, n int) bool {
	if kq8Lanes(t) {
		return kQ8SmallBatch == 0
	}
	return n > kQ8SmallBatch
}

// q80SmallBatchQ8_0 is the most vectors a Q8_0 product multiplies
// through the int8 kernels where they take one vector at a time (the
// portable ones): up to it, a vector's product is the same bit for bit whatever
// else is in the batch, so a decode step of up to 64 sequences gives each
// the logits it gets alone; past it (prompt chunks) decoded rows through
// the GEMM are faster. (A variable for BenchmarkQ80Paths and the tests.)
var q80SmallBatchQ8_0 = 64

// q80ChunkQ8_0 is the longest run of one sequence's vectors (a prompt
// chunk, Pool.SetRun) those kernels take: past it decoded rows win, and a
// prompt chunk of 17 to 64 tokens would otherwise take the slower path
// for the sake of a batch invariance that only decode steps need. For the
// other types q80SmallBatch is already at most this.
const q80ChunkQ8_0 = 16

// q80Decoded reports whether a Q4_0, Q5_0 or Q8_0 product of n vectors takes
// decoded rows through the GEMM rather than the int8 kernels. With the
// VNNI Q8_0 kernels (eight vectors a lane each) it never does unless a
// test or benchmark asks (q80SmallBatchQ8_0 = 0): 2048 × 768 through
// MatMul (BenchmarkQ80Paths, three runs) took 0.16 ms against 0.40–0.51
// decoded at 16 vectors, 0.22–0.31 against 0.55–0.72 at 32, 0.44–0.65
// against 1.13–1.20 at 64 and 0.98–1.11 against 2.04–2.38 at 128. Nor
// with the AVX2 ones (eight vectors a register pair): at
// STEPTHROUGH_CPU=avx2, best of five, 2.8 ms against 3.4 decoded at 64
// vectors and 5.2 against 9.2 at 128.
func (p *Pool) q80Decoded(t quant.Type, n int) bool {
	if q80Lays(t) {
		return q80SmallBatchQ8_0 == 0
	}
	return n > q80SmallBatch(t) || p.run > q80ChunkQ8_0
}

// q80SmallBatch is the most vectors a product with rows of type t
// multiplies through its int8 kernel rather than decoded rows.
func q80SmallBatch(t quant.Type) int {
	if t == quant.Q8_0 {
		return q80SmallBatchQ8_0
	}
	return kSmallBatch
}

// kSmallBatch is the most vectors the legacy 4-/5-bit kernels multiply
// row by row (their rows decode in Go, so the kernel wins longer).
const kSmallBatch = 16

// dotRow is one row of a matrix-vector product, in the row's own type where
// a kernel exists, else through a decoded copy.
func dotRow(t quant.Type, raw []byte, x, buf []float32) float32 {
	switch {
	case t == quant.F32 && hostLittleEndian:
		return dot(f32s(raw), x)
	case t == quant.F16:
		return dotF16(raw, x)
	case t == quant.BF16:
		return dotBF16(raw, x)
	}
	return dot(decodeRow(t, raw, buf), x)
}

// decodeRow returns the row as floats: a view for F32, else decoded into buf.
func decodeRow(t quant.Type, raw []byte, buf []float32) []float32 {
	if t == quant.F32 && hostLittleEndian {
		return f32s(raw)
	}
	decodeRowInto(t, raw, buf) // sizes were checked when the model loaded
	return buf
}

// RowF32 decodes row r of a tensor (an embedding lookup) into dst.
func RowF32(w *model.Tensor, r int, dst []float32) {
	copy(dst, decodeRow(w.Type, w.Row(r), dst))
}

// quantizeX quantizes x (n vectors of cols) into p.q8 unless, within one
// MatMuls call (the products reading one input: Q, K and V; gate and up),
// it holds that x already. Many vectors are split across the pool.
func (p *Pool) quantizeX(x []float32, n, cols int) {
	if len(x) == 0 || p.keepX && p.q8For == &x[0] && p.q8n == n && p.q8cols == cols {
		return
	}
	p.q8.resize(n, cols)
	p.qx = quantizeXTask{x: x, z: &p.q8, cols: cols}
	p.Run(n, max(1, quantizeGrain/cols), &p.qx)
	p.qx = quantizeXTask{}
	p.q8n, p.q8cols, p.xrOK, p.layOK = n, cols, false, false
	if p.keepX {
		p.q8For = &x[0]
	}
}

// layX lays p.q8's n vectors of cols values out in groups of eight for
// the lane kernels (q8K.layLanes), unless they are laid out already.
func (p *Pool) layX(n, cols int) {
	if p.layOK {
		return
	}
	p.q8.resizeLanes(n, cols)
	p.qx = quantizeXTask{z: &p.q8, n: n, cols: cols, lay: true}
	p.Run(laneBlocks(n, cols), max(1, quantizeGrain/2048), &p.qx)
	p.qx = quantizeXTask{}
	p.layOK = true
}

// roundX sets p.xr to p.q8's n vectors of cols back as floats (x rounded
// to 8 bits), unless it holds them already.
func (p *Pool) roundX(n, cols int) {
	if p.xrOK {
		return
	}
	if cap(p.xr) < n*cols {
		p.xr = make([]float32, n*cols)
	}
	p.qx = quantizeXTask{x: p.xr[:n*cols], z: &p.q8, cols: cols, back: true}
	p.Run(n, max(1, quantizeGrain/cols), &p.qx)
	p.qx = quantizeXTask{}
	p.xrOK = true
}

// quantizeGrain is the least values a thread quantizes (or rounds back).
const quantizeGrain = 4096

// quantizeXTask quantizes vectors of x into z (back: sets x from z; lay:
// lays z's vectors out for the lane kernels).
type quantizeXTask struct {
	x         []float32
	z         *q8K
	n, cols   int // lay: n vectors; the task runs over their laid-out blocks
	back, lay bool
}

func (q *quantizeXTask) Run(_, lo, hi int) {
	if q.lay {
		q.z.layLanes(lo, hi, q.n, q.cols)
		return
	}
	x := q.x[lo*q.cols : hi*q.cols]
	if q.back {
		q.z.dequantizeFrom(x, lo*q.cols/256)
		return
	}
	quantizeQ8K(x, q.z, lo*q.cols/256)
}

package cpu

import (
	"encoding/binary"
	"math"
	"unsafe"

	"stepthrough/engine/quant"
)

// q80 is x rounded to Q8_0 blocks for the Q4_0, Q5_0 and Q8_0 int8
// kernels, as llama.cpp rounds a vector it multiplies with such rows (its
// AVX2 quantize_row_q8_0; Q8_0 is the vec_dot_type of all three): per 32
// values, d = max|x|/127 kept as binary16, and q = x·127/max rounded half
// to even. Q5_0 is what llama.cpp's Q4_K_M writes for matrices whose rows
// are not a multiple of 256.
type q80 struct {
	q []int8
	d []float32 // each block's scale, binary16 widened
	// lay is q and d laid out for the VNNI Q8_0 kernels, when they run
	// here: one vector as layQ80Go lays it out, several in groups of
	// eight as layQ80LaneBlock does (the last group's unused lanes hold
	// whatever they held; their results are dropped). layWords per vector
	// or group.
	lay      []uint32
	layWords int
	grouped  bool
	// tiled: groups of eight laid out by layR16Block instead, for Q8_0
	// matrices in sixteen-row tiles (q80Tiles)
	tiled bool
	// halves: groups of eight laid out by layQ80HalvesBlock instead, for
	// the AVX2 kernels (q80Halves)
	halves bool
}

// resize sizes z for n vectors of cols values, and lay too with lay
// (laid out for the tile kernels when z.tiled is set).
func (z *q80) resize(n, cols int, lay bool) {
	if g := (n + 7) &^ 7; cap(z.q) < g*cols { // room for whole groups of eight: the AVX2 tile kernel reads a last group's missing vectors too
		z.q, z.d = make([]int8, n*cols, g*cols), make([]float32, n*cols/32, g*cols/32)
	}
	z.q, z.d = z.q[:n*cols], z.d[:n*cols/32]
	z.grouped = n > 1 || z.tiled // the tile kernels read one vector as lane 0 of a group
	z.halves = z.grouped && q80Halves
	records := 1
	z.layWords = (cols/32 + 1) / 2 * 48
	if z.grouped {
		z.layWords, records = cols/32*z.blockWords(), (n+7)/8
	}
	if !lay {
		z.lay = z.lay[:0]
		return
	}
	if cap(z.lay) < records*z.layWords {
		z.lay = make([]uint32, records*z.layWords)
	}
	z.lay = z.lay[:records*z.layWords]
}

// layOut writes vectors [lo, hi) of cols values, already rounded into q
// and d, into lay.
func (z *q80) layOut(lo, hi, cols int) {
	nb := cols / 32
	for v := lo; v < hi; v++ {
		q, d := z.q[v*cols:(v+1)*cols], z.d[v*nb:(v+1)*nb]
		if z.grouped {
			z.layLane(q, d, z.lay[v/8*z.layWords:(v/8+1)*z.layWords], v%8)
		} else {
			layQ80(q, d, z.lay[:z.layWords])
		}
	}
}

// q80LaneWords is the words of a block of a group of eight vectors laid
// out by layQ80LaneBlock or layR16Block; q80HalvesWords by
// layQ80HalvesBlock.
const (
	q80LaneWords   = 80
	q80HalvesWords = 72
)

// blockWords is the words of a block of a group of eight vectors in z's
// layout.
func (z *q80) blockWords() int {
	if z.halves {
		return q80HalvesWords
	}
	return q80LaneWords
}

// layLane lays out one rounded vector (q, d) as lane l of a group of
// eight in z's layout (layR16Block, layQ80LaneBlock or
// layQ80HalvesBlock).
func (z *q80) layLane(q []int8, d []float32, out []uint32, l int) {
	words := z.blockWords()
	_ = out[len(d)*words-1]
	if len(d) == 0 {
		return
	}
	qb := int8Bytes(q[:len(d)*32])
	for b, db := range d {
		rec := out[b*words:]
		switch {
		case z.halves:
			layQ80HalvesBlock((*[32]byte)(qb[b*32:]), db, (*[q80HalvesWords]uint32)(rec), l)
		case z.tiled:
			layR16Block((*[32]byte)(qb[b*32:]), db, (*[q80LaneWords]uint32)(rec), l)
		default:
			layQ80LaneBlock((*[32]byte)(qb[b*32:]), db, (*[q80LaneWords]uint32)(rec), l)
		}
	}
}

// layQ80HalvesBlock lays out one block of a rounded vector (its 32
// values q and d) as lane l of a group of eight, as dotQ8_0Q80v8AVX2
// reads them: for each half h of the block, 128 bytes, four registers'
// worth in which vector l's sixteen values take bytes 16·(l/4) on of
// register l%4 (vectors k and k+4 share register k); then the eight
// vectors' d (word 64+l).
func layQ80HalvesBlock(q *[32]byte, d float32, rec *[q80HalvesWords]uint32, l int) {
	for h := range 2 {
		for i := range 4 {
			rec[32*h+8*(l%4)+4*(l/4)+i] = binary.LittleEndian.Uint32(q[16*h+4*i:])
		}
	}
	rec[64+l] = math.Float32bits(d)
}

// int8Bytes is the same memory as q, as bytes.
func int8Bytes(q []int8) []byte {
	if len(q) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&q[0])), len(q))
}

// layR16Block lays out one block of a rounded vector (its 32 values q
// and d) as lane l of a group of eight, as dotQ8_0R16v8VNNI reads them:
// the eight vectors' 32 values (eight words each, lane l's from word 8l),
// then their corrections −128·Σ q (word 64+l), then their d (word 72+l).
func layR16Block(q *[32]byte, d float32, rec *[q80LaneWords]uint32, l int) {
	var s int32
	for k := range 8 {
		w := binary.LittleEndian.Uint32(q[4*k:])
		rec[8*l+k] = w
		s += int32(int8(w)) + int32(int8(w>>8)) + int32(int8(w>>16)) + int32(int8(w>>24))
	}
	rec[64+l] = uint32(-128 * s)
	rec[72+l] = math.Float32bits(d)
}

// layQ80LaneBlock lays out one block of a rounded vector (q, d) as lane l
// of a group of eight, as dotQ8_0Q80v8r4VNNI reads them: for each pair of
// groups of four values (2k, 2k+1) the eight vectors' side by side, word
// 16k+2l+p group 2k+p as unsigned bytes x+128; then the block's d at
// words 64+4⌊l/2⌋+l%2 and two on, the order in which the kernel's sums
// come out of its pair additions.
func layQ80LaneBlock(q *[32]byte, d float32, rec *[q80LaneWords]uint32, l int) {
	for k := range 4 { // groups 2k and 2k+1: eight bytes on both sides
		w := binary.LittleEndian.Uint64(q[8*k:]) ^ 0x8080808080808080
		i := lanePair(2*k, l)
		rec[i], rec[i+1] = uint32(w), uint32(w>>32)
	}
	layLaneD(rec[64:], l, d)
}

// layQ80Go lays out one rounded vector (q, d) for the VNNI kernels: for
// each pair of blocks 48 words, the 64 values (four to a word), 16
// corrections −128·(the sum of each four values) and the two blocks' d
// eight times each (an odd last block fills the first half of each part).
func layQ80Go(q []int8, d []float32, out []uint32) {
	for b := range d {
		rec := out[b/2*48+b%2*8:]
		q := q[b*32 : (b+1)*32]
		d := math.Float32bits(d[b])
		for i := range 8 {
			w := q[4*i : 4*i+4]
			rec[i] = uint32(uint8(w[0])) | uint32(uint8(w[1]))<<8 | uint32(uint8(w[2]))<<16 | uint32(uint8(w[3]))<<24
			rec[16+i] = uint32(-128 * (int32(w[0]) + int32(w[1]) + int32(w[2]) + int32(w[3])))
			rec[32+i] = d
		}
	}
}

// q80Task rounds n vectors of x into z on the pool's workers (and, with
// back, writes them back as floats; with lay, lays them out for the VNNI
// Q8_0 kernels). It runs over items: vectors, or, laying out several in
// groups of eight, runs of q80UnitBlocks blocks of a group, so that each
// group's laid-out blocks are written by one worker, not interleaved by
// all (two cores writing the same cache lines).
type q80Task struct {
	z       *q80
	x, back []float32
	n, cols int
	lay     bool
}

// q80UnitBlocks is how many blocks of a group of eight vectors one item
// rounds and lays out (8: 2560 bytes laid out, 40 cache lines).
const q80UnitBlocks = 8

// units is the number of items per group of eight vectors, when the task
// runs over them (else 0).
func (t *q80Task) units() int {
	if !t.lay || !t.z.grouped {
		return 0
	}
	return (t.cols/32 + q80UnitBlocks - 1) / q80UnitBlocks
}

// items is how many items the task runs over, and grain the least a
// worker takes.
func (t *q80Task) items() (n, grain int) {
	if u := t.units(); u > 0 {
		return (t.n + 7) / 8 * u, max(1, quantizeGrain/(8*32*q80UnitBlocks))
	}
	return t.n, max(1, quantizeGrain/t.cols)
}

func (t *q80Task) Run(_, lo, hi int) {
	if u := t.units(); u > 0 {
		for it := lo; it < hi; it++ {
			t.runUnit(it/u, it%u*q80UnitBlocks)
		}
		return
	}
	a, b := lo*t.cols, hi*t.cols
	var back []float32
	if t.back != nil {
		back = t.back[a:b]
	}
	t.z.quantizeRange(t.x[a:b], a, back)
	if t.lay {
		t.z.layOut(lo, hi, t.cols)
	}
}

// runUnit rounds and lays out blocks [b0, b0+q80UnitBlocks) of group g's
// vectors.
func (t *q80Task) runUnit(g, b0 int) {
	b1 := min(t.cols/32, b0+q80UnitBlocks)
	for v := g * 8; v < min(t.n, g*8+8); v++ {
		a, b := v*t.cols+b0*32, v*t.cols+b1*32
		var back []float32
		if t.back != nil {
			back = t.back[a:b]
		}
		t.z.quantizeRange(t.x[a:b], a, back)
		t.z.layLane(t.z.q[a:b], t.z.d[a/32:b/32], t.z.lay[g*t.z.layWords+b0*t.z.blockWords():], v%8)
	}
}

// hasQ80Kernel reports whether a matrix multiplies x rounded to Q8_0
// (q80): Q4_0, Q5_0 and Q8_0, on every platform (where no assembly runs
// their kernels are Go), so every build computes llama.cpp's numbers.
func hasQ80Kernel(t quant.Type, cols int) bool {
	return (t == quant.Q4_0 || t == quant.Q5_0 || t == quant.Q8_0) && cols%32 == 0
}

// quantizeRange rounds x into z from value off (a multiple of 32) on,
// and with back writes the rounded values there.
func (z *q80) quantizeRange(x []float32, off int, back []float32) {
	quantizeQ80(x, z.q[off:off+len(x)], z.d[off/32:(off+len(x))/32], back)
}

// quantizeQ80Go rounds x (a multiple of 32 values) into q and d, a block
// of 32 at a time, and with back writes the rounded values d·q there.
func quantizeQ80Go(x []float32, q []int8, d []float32, back []float32) {
	for b := range len(x) / 32 {
		blk := x[b*32 : b*32+32]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		id := float32(0)
		if amax != 0 {
			id = 127 / amax
		}
		d[b] = quant.F16ToF32(quant.F32ToF16(amax / 127))
		for i, v := range blk {
			q[b*32+i] = int8(math.RoundToEven(float64(v * id)))
		}
		if back != nil {
			for i := range 32 {
				back[b*32+i] = d[b] * float32(q[b*32+i])
			}
		}
	}
}

// dotRowsQ80Each is dotRowsQ80 a row and a vector at a time.
func dotRowsQ80Each(t quant.Type, data []byte, rb, lo, hi int, z *q80, n, cols int, out []float32, rows int) {
	nb := cols / 32
	for r := lo; r < hi; r++ {
		row := data[r*rb : (r+1)*rb]
		for v := range n {
			switch t {
			case quant.Q8_0:
				out[v*rows+r] = dotQ8_0Q80(row, z, v*nb)
			case quant.Q5_0:
				out[v*rows+r] = dotQ5_0Q80(row, z, v*nb)
			default:
				out[v*rows+r] = dotQ4_0Q80(row, z, v*nb)
			}
		}
	}
}

// dotQ8_0Q80Go is a Q8_0 row times one rounded vector (its blocks from
// b0): Σ_blocks d_w·d_x·Σ q_w·q_x, the integer sums exact.
func dotQ8_0Q80Go(row []byte, z *q80, b0 int) float32 {
	var s float32
	for b := range len(row) / 34 {
		blk := row[b*34 : b*34+34]
		x := z.q[(b0+b)*32 : (b0+b+1)*32]
		var sum int32
		for j, w := range blk[2:] {
			sum += int32(int8(w)) * int32(x[j])
		}
		s += half16(blk[0:]) * z.d[b0+b] * float32(sum)
	}
	return s
}

// dotQ5_0Q80Go is a Q5_0 row times one rounded vector (its blocks from
// b0): Σ_blocks d_w·d_x·Σ q_w·q_x, the integer sums exact.
func dotQ5_0Q80Go(row []byte, z *q80, b0 int) float32 {
	var s float32
	for b := range len(row) / 22 {
		blk := row[b*22 : b*22+22]
		qh := uint32(blk[2]) | uint32(blk[3])<<8 | uint32(blk[4])<<16 | uint32(blk[5])<<24
		var sum int32
		for j := range 16 {
			lo := int32(blk[6+j]&15) | int32(qh>>j&1)<<4
			hi := int32(blk[6+j]>>4) | int32(qh>>(j+16)&1)<<4
			sum += (lo-16)*int32(z.q[(b0+b)*32+j]) + (hi-16)*int32(z.q[(b0+b)*32+16+j])
		}
		s += half16(blk[0:]) * z.d[b0+b] * float32(sum)
	}
	return s
}

// dotQ4_0Q80Go is a Q4_0 row times one rounded vector (its blocks from
// b0): Σ_blocks d_w·d_x·Σ q_w·q_x with q_w = nibble − 8 (the low nibbles
// values 0–15, the high ones 16–31), the integer sums exact.
func dotQ4_0Q80Go(row []byte, z *q80, b0 int) float32 {
	var s float32
	for b := range len(row) / 18 {
		blk := row[b*18 : b*18+18]
		x := z.q[(b0+b)*32 : (b0+b+1)*32]
		var sum int32
		for j, v := range blk[2:] {
			sum += (int32(v&15)-8)*int32(x[j]) + (int32(v>>4)-8)*int32(x[16+j])
		}
		s += half16(blk[0:]) * z.d[b0+b] * float32(sum)
	}
	return s
}

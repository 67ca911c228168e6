package cpu

import (
	"encoding/binary"
	"math"

	"stepthrough/engine/quant"
)

// K-quant products with int8 activations, as llama.cpp computes them: x
// is quantized once per product to blocks of 256 int8 values with one
// float scale (q8K), and a row's 4- or 6-bit values multiply those int8
// values in integer arithmetic (VPMADDUBSW), with the block scales applied
// once per sub-block. Four times fewer instructions per weight than
// converting every value to float; the cost is x's rounding to 8 bits
// (a relative error near 0.4% per value, far below the weights' own).

// q8K is x quantized: per 256 values d (x ≈ d·q), q, and the sums of q
// over each 16 values (for the Q4_K mins and the Q6_K offset of 32); and,
// for the lane kernels, lay: the vectors in groups of eight (layLanes).
type q8K struct {
	d   []float32
	q   []int8
	bs  []int16
	lay []uint32
}

// laneBlockWords is the size of one block of a group of eight laid-out
// vectors: for each four values the eight vectors' (64 groups), their
// sums over each 16 in pairs (8), eight words each, and their d twice
// (16 words).
const laneBlockWords = 8*(64+8) + 16

// laneWords is the words of one laid-out block of a group of eight:
// laneBlockWords for the VNNI lane kernels; for the AVX2 ones, which read
// the vectors in place, the eight vectors' d.
func laneWords() int {
	if useKQ8AVX2 {
		return 8
	}
	return laneBlockWords
}

// resizeLanes makes room in lay for n vectors of cols values.
func (z *q8K) resizeLanes(n, cols int) {
	w := (n + 7) / 8 * cols / 256 * laneWords()
	if cap(z.lay) < w {
		z.lay = make([]uint32, w)
	}
	z.lay = z.lay[:w]
}

// laneBlocks is the number of laid-out blocks of n vectors of cols values:
// one per group of eight and block of 256 values.
func laneBlocks(n, cols int) int { return (n + 7) / 8 * (cols / 256) }

// layLanes lays out the laid-out blocks [lo, hi) of n vectors of cols
// values, each block of one group of eight written whole by one caller.
// Vector v is lane l = v%8 of group v/8, whose block b holds, pairs side
// by side as the lane kernels read them (word 16⌊i/2⌋+2l+i%2 for item i
// of lane l): the four values 4g..4g+3 as unsigned bytes x+128 (item g,
// words 0–511), the sums over 16 values 2j and 2j+1 as an int16 pair
// (item j, from word 512); then d at words 576+4⌊l/2⌋+l%2 and two on
// (the order of the kernels' pair additions, PAIR_ADD). The last group's unused lanes hold whatever they held;
// their results are dropped.
//
// For the AVX2 kernels block b of group g holds just the d of the
// group's vectors (word l lane l's).
func (z *q8K) layLanes(lo, hi, n, cols int) {
	nb := cols / 256
	words := laneWords()
	for gb := lo; gb < hi; gb++ {
		rec := z.lay[gb*words:][:words]
		v0, b := gb/nb*8, gb%nb
		if useKQ8AVX2 {
			for l := range min(8, n-v0) {
				rec[l] = math.Float32bits(z.d[(v0+l)*nb+b])
			}
			continue
		}
		for l := range min(8, n-v0) {
			v := v0 + l
			qb := int8Bytes(z.q[(v*nb+b)*256:][:256])
			// groups 2k and 2k+1: eight bytes on both sides
			for k := range 32 {
				w := binary.LittleEndian.Uint64(qb[8*k:]) ^ 0x8080808080808080
				i := lanePair(2*k, l)
				rec[i], rec[i+1] = uint32(w), uint32(w>>32)
			}
			bs := z.bs[(v*nb+b)*16:][:16]
			for j := range 8 {
				rec[512+lanePair(j, l)] = uint32(uint16(bs[2*j])) | uint32(uint16(bs[2*j+1]))<<16
			}
			layLaneD(rec[576:], l, z.d[v*nb+b])
		}
	}
}

// lanePair is the word of item i of lane l in a run of laid-out pairs of
// items: the eight lanes' items 2k and 2k+1 side by side, 16 words.
func lanePair(i, l int) int { return 16*(i/2) + 2*l + i%2 }

// layLaneD writes lane l's d into the 16 words at rec in the order the
// lane kernels' pair additions leave their sums (PAIR_ADD): per 4 words
// lanes 2i and 2i+1, twice.
func layLaneD(rec []uint32, l int, d float32) {
	rec[4*(l/2)+l%2] = math.Float32bits(d)
	rec[4*(l/2)+2+l%2] = math.Float32bits(d)
}

// resize makes room for n vectors of cols values (cols a multiple of 256),
// and capacity for whole groups of eight: the AVX2 lane kernels read a
// last group's missing vectors too (their results are dropped).
func (z *q8K) resize(n, cols int) {
	nb := n * cols / 256
	if g := (n + 7) &^ 7; cap(z.q) < g*cols {
		z.d, z.q, z.bs = make([]float32, nb, g*cols/256), make([]int8, n*cols, g*cols), make([]int16, nb*16, g*cols/16)
	}
	z.d, z.q, z.bs = z.d[:nb], z.q[:n*cols], z.bs[:nb*16]
}

// quantizeQ8KGo quantizes x (a multiple of 256 values) into z's blocks
// from block b0 on; q rounds to nearest, ties to even (as VCVTPS2DQ).
func quantizeQ8KGo(x []float32, z *q8K, b0 int) {
	for b := 0; b*256 < len(x); b++ {
		xb := x[b*256 : b*256+256]
		var amax float32
		for _, v := range xb {
			amax = max(amax, v, -v)
		}
		q := z.q[(b0+b)*256 : (b0+b)*256+256]
		bs := z.bs[(b0+b)*16 : (b0+b)*16+16]
		if amax == 0 {
			z.d[b0+b] = 0
			clear(q)
			clear(bs)
			continue
		}
		iscale := 127 / amax
		z.d[b0+b] = amax / 127
		for i, v := range xb {
			q[i] = int8(math.RoundToEven(float64(v * iscale)))
		}
		for g := range 16 {
			var s int16
			for _, v := range q[16*g : 16*g+16] {
				s += int16(v)
			}
			bs[g] = s
		}
	}
}

// dotQ4_KQ8Go is a Q4_K row times a quantized x (blocks from b0): per
// block d·dx·Σ_j sc_j·(q·qx over sub-block j) − dmin·dx·Σ_j m_j·(Σ qx).
func dotQ4_KQ8Go(row []byte, z *q8K, b0 int) float32 {
	var sum float32
	for b := 0; b*144 < len(row); b++ {
		blk := row[b*144 : b*144+144]
		d, dmin := half16(blk), half16(blk[2:])
		_, mn := scalesK4(blk[4:16])
		bs := z.bs[(b0+b)*16:]
		sumi := q4KScaled(blk, z.q[(b0+b)*256:])
		var summ int32
		for j := 0; j < 8; j++ {
			summ += int32(mn[j]) * (int32(bs[2*j]) + int32(bs[2*j+1]))
		}
		dx := z.d[b0+b]
		sum += d*dx*float32(sumi) - dmin*dx*float32(summ)
	}
	return sum
}

// q4KScaled is Σ_j sc_j·(Σ q·qx over sub-block j) for the Q4_K block blk
// and 256 values qx.
func q4KScaled(blk []byte, qx []int8) int32 {
	sc, _ := scalesK4(blk[4:16])
	q := blk[16:144]
	qx = qx[:256]
	var sumi int32
	for p := 0; p < 4; p++ {
		var lo, hi int32
		for l := 0; l < 32; l++ {
			lo += int32(q[32*p+l]&15) * int32(qx[64*p+l])
			hi += int32(q[32*p+l]>>4) * int32(qx[64*p+32+l])
		}
		sumi += int32(sc[2*p])*lo + int32(sc[2*p+1])*hi
	}
	return sumi
}

// dotQ6_KQ8Go is a Q6_K row times a quantized x: per block
// d·dx·Σ_s sc_s·(Σ q·qx − 32·Σ qx) over the 16 sub-blocks of 16 values.
func dotQ6_KQ8Go(row []byte, z *q8K, b0 int) float32 {
	var sum float32
	for b := 0; b*210 < len(row); b++ {
		blk := row[b*210 : b*210+210]
		bs := z.bs[(b0+b)*16:]
		sumi := q6KScaled(blk, z.q[(b0+b)*256:])
		for s := 0; s < 16; s++ {
			sumi -= 32 * int32(int8(blk[192+s])) * int32(bs[s])
		}
		sum += half16(blk[208:]) * z.d[b0+b] * float32(sumi)
	}
	return sum
}

// q6KScaled is Σ_s sc_s·(Σ q·qx over sub-block s), q the six-bit values
// (0–63), for the Q6_K block blk and 256 values qx.
func q6KScaled(blk []byte, qx []int8) int32 {
	qx = qx[:256]
	var sumi int32
	for n := 0; n < 2; n++ {
		ql, qh, sc := blk[64*n:], blk[128+32*n:], blk[192+8*n:]
		xn := qx[128*n:]
		for g := 0; g < 4; g++ {
			var s0, s1 int32
			for l := 0; l < 32; l++ {
				lo := ql[l+32*(g%2)] >> (4 * (g / 2)) & 15
				q := int32(lo | (qh[l]>>(2*g)&3)<<4)
				if l < 16 {
					s0 += q * int32(xn[32*g+l])
				} else {
					s1 += q * int32(xn[32*g+l])
				}
			}
			sumi += int32(int8(sc[2*g]))*s0 + int32(int8(sc[2*g+1]))*s1
		}
	}
	return sumi
}

// dequantizeFrom writes d·q (x as the int8 kernels see it) for the
// len(out) values (whole blocks) from block b0 on.
func (z *q8K) dequantizeFrom(out []float32, b0 int) {
	if dequantQ8K(z, out, b0) {
		return
	}
	for i, v := range z.q[b0*256 : b0*256+len(out)] {
		out[i] = z.d[b0+i/256] * float32(v)
	}
}

// dotQ5_KQ8Go is dotQ4_KQ8Go for Q5_K: each value's fifth bit comes from
// the block's 32 high-bit bytes (bit 2p for sub-block 2p, 2p+1 for 2p+1).
func dotQ5_KQ8Go(row []byte, z *q8K, b0 int) float32 {
	var sum float32
	for b := 0; b*176 < len(row); b++ {
		blk := row[b*176 : b*176+176]
		d, dmin := half16(blk), half16(blk[2:])
		sc, mn := scalesK4(blk[4:16])
		qh, q, qx, bs := blk[16:48], blk[48:], z.q[(b0+b)*256:], z.bs[(b0+b)*16:]
		var sumi, summ int32
		for p := 0; p < 4; p++ {
			var lo, hi int32
			for l := 0; l < 32; l++ {
				vl := int32(q[32*p+l]&15) | int32(qh[l]>>(2*p)&1)<<4
				vh := int32(q[32*p+l]>>4) | int32(qh[l]>>(2*p+1)&1)<<4
				lo += vl * int32(qx[64*p+l])
				hi += vh * int32(qx[64*p+32+l])
			}
			sumi += int32(sc[2*p])*lo + int32(sc[2*p+1])*hi
		}
		for j := 0; j < 8; j++ {
			summ += int32(mn[j]) * (int32(bs[2*j]) + int32(bs[2*j+1]))
		}
		dx := z.d[b0+b]
		sum += d*dx*float32(sumi) - dmin*dx*float32(summ)
	}
	return sum
}

// dotKQ8Go is the Go kernel of a type.
func dotKQ8Go(t quant.Type, row []byte, z *q8K, b0 int) float32 {
	switch t {
	case quant.Q4_K:
		return dotQ4_KQ8Go(row, z, b0)
	case quant.Q5_K:
		return dotQ5_KQ8Go(row, z, b0)
	}
	return dotQ6_KQ8Go(row, z, b0)
}

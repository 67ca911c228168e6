package cpu

import "stepthrough/engine/quant"

// K-quant dot products without decoding a row to floats first. Both take
// x's sums over groups of values (xSums), shared by every row of a matrix:
// a Q4_K value is d·sc·q − dmin·m, so its row·x is Σ d·sc·(q·x) − Σ
// dmin·m·(sum of x over the sub-block); a Q6_K value is d·sc·(q − 32).

// xSums writes the sums of x over consecutive groups of g values.
func xSums(x []float32, g int, s []float32) {
	for i := range s {
		var t float32
		for _, v := range x[i*g : (i+1)*g] {
			t += v
		}
		s[i] = t
	}
}

func half16(b []byte) float32 { return quant.F16ToF32(uint16(b[0]) | uint16(b[1])<<8) }

// scalesK4 unpacks a Q4_K/Q5_K block's 8 six-bit scales and mins from the
// 12 bytes after d and dmin.
func scalesK4(q []byte) (sc, mn [8]uint8) {
	for j := 0; j < 4; j++ {
		sc[j], mn[j] = q[j]&63, q[j+4]&63
		sc[j+4] = q[j+8]&0x0f | (q[j]>>6)<<4
		mn[j+4] = q[j+8]>>4 | (q[j+4]>>6)<<4
	}
	return
}

// dotQ4_KGo is a Q4_K row (blocks of 144 bytes) times x; xs32 holds x's
// sums over 32 values.
func dotQ4_KGo(row []byte, x, xs32 []float32) float32 {
	var sum float32
	for b := 0; b*144 < len(row); b++ {
		blk := row[b*144 : b*144+144]
		d, dmin := half16(blk), half16(blk[2:])
		sc, mn := scalesK4(blk[4:16])
		xb, q := x[b*256:], blk[16:]
		for p := 0; p < 4; p++ {
			var lo, hi float32
			for l := 0; l < 32; l++ {
				lo += float32(q[32*p+l]&15) * xb[64*p+l]
				hi += float32(q[32*p+l]>>4) * xb[64*p+32+l]
			}
			sum += d*float32(sc[2*p])*lo + d*float32(sc[2*p+1])*hi
		}
		for j := 0; j < 8; j++ {
			sum -= dmin * float32(mn[j]) * xs32[b*8+j]
		}
	}
	return sum
}

// dotQ6_KGo is a Q6_K row (blocks of 210 bytes) times x; xs16 holds x's
// sums over 16 values.
func dotQ6_KGo(row []byte, x, xs16 []float32) float32 {
	var sum float32
	for b := 0; b*210 < len(row); b++ {
		blk := row[b*210 : b*210+210]
		d := half16(blk[208:])
		xb := x[b*256:]
		var block float32
		for n := 0; n < 2; n++ {
			ql, qh, sc := blk[64*n:], blk[128+32*n:], blk[192+8*n:]
			xn := xb[128*n:]
			for g := 0; g < 4; g++ { // values 32g+l of this half
				var s0, s1 float32
				for l := 0; l < 32; l++ {
					lo := ql[l+32*(g%2)] >> (4 * (g / 2)) & 15
					q := lo | (qh[l]>>(2*g)&3)<<4
					if l < 16 {
						s0 += float32(q) * xn[32*g+l]
					} else {
						s1 += float32(q) * xn[32*g+l]
					}
				}
				block += float32(int8(sc[2*g]))*s0 + float32(int8(sc[2*g+1]))*s1
			}
		}
		for ib := 0; ib < 16; ib++ {
			block -= 32 * float32(int8(blk[192+ib])) * xs16[b*16+ib]
		}
		sum += d * block
	}
	return sum
}

// dotLegacyGo is a Q4_0, Q5_0, Q4_1 or Q5_1 row times x (xs32: x's sums
// over 32 values): Q4_0 and Q5_0 values are d·(q − 8) and d·(q − 16),
// Q4_1 and Q5_1 values d·q + m.
func dotLegacyGo(t quant.Type, row []byte, x, xs32 []float32) float32 {
	bb := t.BlockBytes()
	var sum float32
	var y [32]float32
	for b := 0; b*bb < len(row); b++ {
		blk := row[b*bb : (b+1)*bb]
		// the block's levels q (no offset, no min) via the decoder with d = 1, m = 0
		var raw [24]byte
		copy(raw[:], blk)
		raw[0], raw[1] = 0x00, 0x3c // d = 1.0
		if t == quant.Q4_1 || t == quant.Q5_1 {
			raw[2], raw[3] = 0, 0 // m = 0
		}
		quant.Dequantize(t, raw[:bb], y[:])
		var s float32
		for i, v := range y {
			s += v * x[b*32+i]
		}
		d := half16(blk)
		switch t {
		case quant.Q4_1, quant.Q5_1:
			sum += d*s + half16(blk[2:])*xs32[b]
		default: // the decoder already subtracted the offset
			sum += d * s
		}
	}
	return sum
}

package cpu

import "stepthrough/engine/quant"

// Legacy 4- and 5-bit dot products without decoding a row to floats
// first. They take x's sums over groups of 32 values (xSums), shared by
// every row of a matrix: a Q4_1 value is d·q + m, so its row·x is Σ d·(q·x)
// + m·(sum of x over the block). The K-quants multiply 8-bit x (q8k.go).

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

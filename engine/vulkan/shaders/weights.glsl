// Weight decoding: W is the raw tensor as 32-bit words. WTYPE selects the
// ggml type: 0 F32, 1 F16, 8 Q8_0, 2 Q4_0, 3 Q4_1, 6 Q5_0, 7 Q5_1, 12 Q4_K,
// 13 Q5_K, 14 Q6_K (each decoded in the shader from ggml's block layout).
// wrow(r, k) is element k of row r
// of a matrix whose rows hold COLS elements (row bytes are a multiple of 2).
layout(std430, binding = 0) readonly buffer Wb { uint W[]; };

uint wbyte(uint off) { return (W[off >> 2] >> ((off & 3u) * 8u)) & 0xffu; }
float whalf(uint off) { // an f16 at an even byte offset
	uint word = W[off >> 2];
	return unpackHalf2x16((off & 2u) != 0u ? (word >> 16) : word).x;
}

#if WTYPE == 0
uint rowBytes(uint cols) { return cols * 4u; }
float wget(uint rowOff, uint k) { return uintBitsToFloat(W[(rowOff >> 2) + k]); }
#elif WTYPE == 1
uint rowBytes(uint cols) { return cols * 2u; }
float wget(uint rowOff, uint k) { return whalf(rowOff + k * 2u); }
#elif WTYPE == 8
uint rowBytes(uint cols) { return cols / 32u * 34u; }
float wget(uint rowOff, uint k) {
	uint b = rowOff + (k >> 5) * 34u;
	int q = int(wbyte(b + 2u + (k & 31u)));
	q = q >= 128 ? q - 256 : q;
	return whalf(b) * float(q);
}
#elif WTYPE == 2
uint rowBytes(uint cols) { return cols / 32u * 18u; }
float wget(uint rowOff, uint k) {
	uint b = rowOff + (k >> 5) * 18u;
	uint j = k & 31u;
	uint byte = wbyte(b + 2u + (j & 15u));
	uint q = j < 16u ? (byte & 15u) : (byte >> 4);
	return whalf(b) * (float(q) - 8.0);
}
#elif WTYPE == 3
uint rowBytes(uint cols) { return cols / 32u * 20u; }
float wget(uint rowOff, uint k) {
	uint b = rowOff + (k >> 5) * 20u;
	uint j = k & 31u;
	uint byte = wbyte(b + 4u + (j & 15u));
	uint q = j < 16u ? (byte & 15u) : (byte >> 4);
	return whalf(b) * float(q) + whalf(b + 2u);
}
#elif WTYPE == 6 || WTYPE == 7
// Q5_0: d, a 32-bit mask of fifth bits, 16 bytes of nibbles; Q5_1 adds m
uint rowBytes(uint cols) { return cols / 32u * (WTYPE == 6 ? 22u : 24u); }
float wget(uint rowOff, uint k) {
	uint bs = WTYPE == 6 ? 22u : 24u;
	uint hb = WTYPE == 6 ? 2u : 4u;
	uint b = rowOff + (k >> 5) * bs;
	uint j = k & 31u;
	uint byte = wbyte(b + hb + 4u + (j & 15u));
	uint q = j < 16u ? (byte & 15u) : (byte >> 4);
	q |= ((wbyte(b + hb + (j >> 3)) >> (j & 7u)) & 1u) << 4;
#if WTYPE == 6
	return whalf(b) * (float(q) - 16.0);
#else
	return whalf(b) * float(q) + whalf(b + 2u);
#endif
}
#elif WTYPE == 12 || WTYPE == 13
// Q4_K and Q5_K: 256 values in 8 sub-blocks of 32, each with a 6-bit scale
// and min against the block's d and dmin; pairs of sub-blocks share bytes
// (low nibbles, high nibbles); Q5_K's fifth bits are bit j of byte l of qh
uint rowBytes(uint cols) { return cols / 256u * (WTYPE == 12 ? 144u : 176u); }
float wget(uint rowOff, uint k) {
	uint b = rowOff + (k >> 8) * (WTYPE == 12 ? 144u : 176u);
	uint i = k & 255u;
	uint j = i >> 5, l = i & 31u;
	uint sc, mn;
	if (j < 4u) {
		sc = wbyte(b + 4u + j) & 63u;
		mn = wbyte(b + 8u + j) & 63u;
	} else {
		sc = (wbyte(b + 8u + j) & 15u) | ((wbyte(b + j) >> 6) << 4);
		mn = (wbyte(b + 8u + j) >> 4) | ((wbyte(b + 4u + j) >> 6) << 4);
	}
	uint qs = WTYPE == 12 ? 16u : 48u;
	uint q = (wbyte(b + qs + 32u * (j >> 1) + l) >> (4u * (j & 1u))) & 15u;
#if WTYPE == 13
	q |= ((wbyte(b + 16u + l) >> j) & 1u) << 4;
#endif
	return whalf(b) * float(sc) * float(q) - whalf(b + 2u) * float(mn);
}
#elif WTYPE == 14
// Q6_K: 256 values in halves of 128; value e = 32g + l of a half has its
// low 4 bits in ql (high nibble for g >= 2) and 2 more bits in qh; an int8
// scale per 16 values
uint rowBytes(uint cols) { return cols / 256u * 210u; }
float wget(uint rowOff, uint k) {
	uint b = rowOff + (k >> 8) * 210u;
	uint i = k & 255u;
	uint n = i >> 7, e = i & 127u;
	uint g = e >> 5, l = e & 31u;
	uint lo = (wbyte(b + 64u * n + l + 32u * (g & 1u)) >> (4u * (g >> 1))) & 15u;
	uint hi = (wbyte(b + 128u + 32u * n + l) >> (2u * g)) & 3u;
	int sc = int(wbyte(b + 192u + (i >> 4)));
	sc = sc >= 128 ? sc - 256 : sc;
	return whalf(b + 208u) * float(sc) * (float(lo | (hi << 4)) - 32.0);
}
#endif

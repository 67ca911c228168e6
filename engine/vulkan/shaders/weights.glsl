// Weight decoding: W is the raw tensor as 32-bit words. WTYPE selects the
// ggml type: 0 F32, 1 F16, 8 Q8_0, 2 Q4_0. wrow(r, k) is element k of row r
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
#endif

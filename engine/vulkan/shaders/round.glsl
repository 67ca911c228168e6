// Rounding a block of QK values to 8 bits as the CPU rounds the vector it
// multiplies with Q8_0, Q5_0 and K-quant rows: amax = max|x|,
// q = x·(127/amax) rounded half to even, the value d·q with d = amax/127
// kept as binary16 for QK = 32 (Q8_0's blocks), as float for QK = 256
// (Q8_K's).
float roundInv(float amax) { return amax == 0.0 ? 0.0 : 127.0 / amax; }
float roundD(float amax) {
#if QK == 32
	return unpackHalf2x16(packHalf2x16(vec2(amax / 127.0, 0.0))).x;
#else
	return amax / 127.0;
#endif
}

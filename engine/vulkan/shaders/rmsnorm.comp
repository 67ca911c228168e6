#version 450
// Out[t] = X[t] / sqrt(mean(X[t]^2) + eps) * Wn, one workgroup per row.
// Built with QK, the normed row is rounded to 8 bits in blocks of QK
// values (see round.glsl) as it is written, rows from t0 on: the input of
// a product with Q8_0, Q5_0 or K-quant rows, as the CPU multiplies it.
#include "common.glsl"
#ifdef QK
#include "round.glsl"
#endif
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Xb { float X[]; };
layout(std430, binding = 1) readonly buffer Wb { float Wn[]; };
layout(std430, binding = 2) writeonly buffer Ob { float O[]; };
shared float red[64];
// pc: 0 cols, 1 eps; QK: 2 t0
void main() {
	uint cols = PU(0), t = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x, ot = t;
#ifdef QK
	t += PU(2);
#endif
	float s = 0.0;
	for (uint k = lid; k < cols; k += 64u) { float v = X[t * cols + k]; s += v * v; }
	red[lid] = s;
	barrier();
	for (uint h = 32u; h > 0u; h >>= 1) { if (lid < h) red[lid] += red[lid + h]; barrier(); }
	float scale = 1.0 / sqrt(red[0] / float(cols) + PF(1));
#ifdef QK
	for (uint b = lid; b < cols / QK; b += 64u) {
		uint k0 = b * QK;
		float amax = 0.0;
		for (uint i = 0u; i < QK; i++) amax = max(amax, abs(X[t * cols + k0 + i] * scale * Wn[k0 + i]));
		float id = roundInv(amax), d = roundD(amax);
		for (uint i = 0u; i < QK; i++) O[ot * cols + k0 + i] = d * roundEven(X[t * cols + k0 + i] * scale * Wn[k0 + i] * id);
	}
#else
	for (uint k = lid; k < cols; k += 64u) O[ot * cols + k] = X[t * cols + k] * scale * Wn[k];
#endif
}

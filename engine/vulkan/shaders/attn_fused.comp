#version 450
// Attention for one query row and head per workgroup, in one dispatch:
// scores q·k·scale over the visible keys (positions 0 … pos0 + P[0] + t)
// into shared memory, softmax there, then each output dimension as the
// weighted sum of V. It replaces attn_scores, softmax and attn_out (and
// their two barriers) when no hook reads the scores; contexts up to
// MAXCTX positions.
#include "common.glsl"
#define MAXCTX 2048u
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Qb { float Q[]; };
layout(std430, binding = 1) readonly buffer Kb { float K[]; };
layout(std430, binding = 2) readonly buffer Vb { float V[]; };
layout(std430, binding = 3) writeonly buffer Ob { float O[]; };
layout(std430, binding = 4) readonly buffer Pb { uint P[]; };
shared float sc[MAXCTX];
shared float red[64];
// pc: 0 heads, 1 kvHeads, 2 headDim, 4 pos0, 5 n, 6 scale, 7 qStride,
// 8 kvDim, 9 outStride
void main() {
	uint heads = PU(0), hd = PU(2), lid = gl_LocalInvocationID.x;
	uint t = gl_WorkGroupID.x / heads, h = gl_WorkGroupID.x % heads;
	if (t >= PU(5)) return;
	uint vis = min(PU(4) + P[0] + t + 1u, MAXCTX);
	uint kh = h / (heads / PU(1)), q = t * PU(7) + h * hd, ko = kh * hd;
	float m = uintBitsToFloat(0xff800000u);
	for (uint j = lid; j < vis; j += 64u) {
		float s = 0.0;
		uint k = j * PU(8) + ko;
		for (uint d = 0u; d < hd; d++) s += Q[q + d] * K[k + d];
		s *= PF(6);
		sc[j] = s;
		m = max(m, s);
	}
	red[lid] = m;
	barrier();
	for (uint s = 32u; s > 0u; s >>= 1) { if (lid < s) red[lid] = max(red[lid], red[lid + s]); barrier(); }
	m = red[0];
	barrier();
	float sum = 0.0;
	for (uint j = lid; j < vis; j += 64u) { float e = exp(sc[j] - m); sc[j] = e; sum += e; }
	red[lid] = sum;
	barrier();
	for (uint s = 32u; s > 0u; s >>= 1) { if (lid < s) red[lid] += red[lid + s]; barrier(); }
	float inv = 1.0 / red[0];
	for (uint d = lid; d < hd; d += 64u) {
		float acc = 0.0;
		for (uint j = 0u; j < vis; j++) acc += sc[j] * V[j * PU(8) + ko + d];
		O[t * PU(9) + h * hd + d] = acc * inv;
	}
}

#version 450
// S[t][h][j] = (q[t][h] . K[j][h/group]) * scale for j <= pos0+t, -inf after
// (the causal mask) and, with a window w > 0, -inf for j <= pos0+t-w (a
// sliding window), over ctx = pos0+n cached positions.
#include "common.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Qb { float Q[]; };
layout(std430, binding = 1) readonly buffer Kb { float K[]; };
layout(std430, binding = 2) writeonly buffer Sb { float S[]; };
// pc: 0 heads, 1 kvHeads, 2 headDim, 3 ctx, 4 pos0, 5 n, 6 scale, 7 qStride, 8 kvDim, 9 window
void main() {
	uint heads = PU(0), hd = PU(2), ctx = PU(3), n = PU(5);
	uint i = gl_GlobalInvocationID.x;
	if (i >= n * heads * ctx) return;
	uint t = i / (heads * ctx), h = (i / ctx) % heads, j = i % ctx;
	if (j > PU(4) + t || PU(9) > 0u && j + PU(9) <= PU(4) + t) { S[i] = uintBitsToFloat(0xff800000u); return; }
	uint kh = h / (heads / PU(1));
	uint q = t * PU(7) + h * hd, k = j * PU(8) + kh * hd;
	float s = 0.0;
	for (uint d = 0u; d < hd; d++) s += Q[q + d] * K[k + d];
	S[i] = s * PF(6);
}

#version 450
// In-place softmax of each row: exp(x - max) / sum; -inf becomes 0.
#include "common.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Sb { float S[]; };
shared float red[64];
// pc: 0 row length
void main() {
	uint len = PU(0), r = gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u, lid = gl_LocalInvocationID.x;
	uint base = r * len;
	float m = uintBitsToFloat(0xff800000u);
	for (uint k = lid; k < len; k += 64u) m = max(m, S[base + k]);
	red[lid] = m;
	barrier();
	for (uint h = 32u; h > 0u; h >>= 1) { if (lid < h) red[lid] = max(red[lid], red[lid + h]); barrier(); }
	m = red[0];
	barrier();
	float s = 0.0;
	for (uint k = lid; k < len; k += 64u) { float e = exp(S[base + k] - m); S[base + k] = e; s += e; }
	red[lid] = s;
	barrier();
	for (uint h = 32u; h > 0u; h >>= 1) { if (lid < h) red[lid] += red[lid + h]; barrier(); }
	float inv = 1.0 / red[0];
	for (uint k = lid; k < len; k += 64u) S[base + k] *= inv;
}

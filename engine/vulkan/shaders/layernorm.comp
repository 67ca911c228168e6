#version 450
// Out[t] = (X[t] - mean) / sqrt(var + eps) * Wn + Bn, one workgroup per row.
#include "common.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Xb { float X[]; };
layout(std430, binding = 1) readonly buffer Wb { float Wn[]; };
layout(std430, binding = 2) readonly buffer Bb { float Bn[]; };
layout(std430, binding = 3) writeonly buffer Ob { float O[]; };
shared float red[64];
// pc: 0 cols, 1 eps
void main() {
	uint cols = PU(0), t = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
	float s = 0.0;
	for (uint k = lid; k < cols; k += 64u) s += X[t * cols + k];
	red[lid] = s;
	barrier();
	for (uint h = 32u; h > 0u; h >>= 1) { if (lid < h) red[lid] += red[lid + h]; barrier(); }
	float mean = red[0] / float(cols);
	barrier();
	s = 0.0;
	for (uint k = lid; k < cols; k += 64u) { float d = X[t * cols + k] - mean; s += d * d; }
	red[lid] = s;
	barrier();
	for (uint h = 32u; h > 0u; h >>= 1) { if (lid < h) red[lid] += red[lid + h]; barrier(); }
	float scale = 1.0 / sqrt(red[0] / float(cols) + PF(1));
	for (uint k = lid; k < cols; k += 64u) O[t * cols + k] = (X[t * cols + k] - mean) * scale * Wn[k] + Bn[k];
}

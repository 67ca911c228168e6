#version 450
// Y[t][r] = dot(row row0+r of W, X[t]) for a prompt chunk: a workgroup
// computes a tile of 32 rows × 32 vectors, 16 values of the row length at
// a time — each weight and input decoded once into shared memory and read
// there by 32 invocations — and each invocation keeps a 4 × 4 block of
// sums in registers. matmul.comp's row-per-workgroup form is for a few
// vectors (a decode step); this one for 16 or more.
#include "common.glsl"
#include "weights.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 1) readonly buffer Xb { float X[]; };
layout(std430, binding = 2) writeonly buffer Yb { float Y[]; };
shared float Ws[16][32];
shared float Xs[16][32];
// pc: 0 rows, 1 cols, 2 n, 3 row0
void main() {
	uint rows = PU(0), cols = PU(1), n = PU(2), lid = gl_LocalInvocationID.x;
	uint r0 = gl_WorkGroupID.x * 32u, t0 = gl_WorkGroupID.y * 32u;
	uint tr = (lid % 8u) * 4u, tc = (lid / 8u) * 4u;
	uint rb = rowBytes(cols);
	float acc[4][4];
	[[unroll]] for (uint i = 0u; i < 4u; i++) [[unroll]] for (uint j = 0u; j < 4u; j++) acc[i][j] = 0.0;
	for (uint k0 = 0u; k0 < cols; k0 += 16u) {
		[[unroll]] for (uint e = 0u; e < 8u; e++) {
			uint idx = lid + 64u * e, a = idx / 16u, kk = idx % 16u, k = k0 + kk;
			Ws[kk][a] = (r0 + a < rows && k < cols) ? wget((PU(3) + r0 + a) * rb, k) : 0.0;
			Xs[kk][a] = (t0 + a < n && k < cols) ? X[(t0 + a) * cols + k] : 0.0;
		}
		barrier();
		[[unroll]] for (uint kk = 0u; kk < 16u; kk++) {
			float w[4], x[4];
			[[unroll]] for (uint i = 0u; i < 4u; i++) { w[i] = Ws[kk][tr + i]; x[i] = Xs[kk][tc + i]; }
			[[unroll]] for (uint i = 0u; i < 4u; i++) [[unroll]] for (uint j = 0u; j < 4u; j++) acc[i][j] += w[i] * x[j];
		}
		barrier();
	}
	[[unroll]] for (uint i = 0u; i < 4u; i++) {
		[[unroll]] for (uint j = 0u; j < 4u; j++) {
			uint r = r0 + tr + i, t = t0 + tc + j;
			if (r < rows && t < n) Y[t * rows + r] = acc[i][j];
		}
	}
}

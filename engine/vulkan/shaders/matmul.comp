#version 450
// Y[t][r] = dot(row r of W, X[t]) for t < n: one workgroup per row; each
// invocation accumulates a strided slice of the row for up to 8 vectors at
// a time, then a shared-memory tree reduction.
#include "common.glsl"
#include "weights.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 1) readonly buffer Xb { float X[]; };
layout(std430, binding = 2) writeonly buffer Yb { float Y[]; };
shared float red[8][64];
// pc: 0 rows, 1 cols, 2 n
void main() {
	uint rows = PU(0), cols = PU(1), n = PU(2);
	uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u;
	if (r >= rows) return;
	uint lid = gl_LocalInvocationID.x;
	uint rowOff = r * rowBytes(cols);
	for (uint t0 = 0u; t0 < n; t0 += 8u) {
		uint nt = min(8u, n - t0);
		float acc[8] = float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
		for (uint k = lid; k < cols; k += 64u) {
			float w = wget(rowOff, k);
			[[unroll]] for (uint j = 0u; j < 8u; j++) {
				if (j < nt) acc[j] += w * X[(t0 + j) * cols + k];
			}
		}
		[[unroll]] for (uint j = 0u; j < 8u; j++) red[j][lid] = acc[j];
		barrier();
		for (uint s = 32u; s > 0u; s >>= 1) {
			if (lid < s) {
				[[unroll]] for (uint j = 0u; j < 8u; j++) red[j][lid] += red[j][lid + s];
			}
			barrier();
		}
		if (lid < nt) Y[(t0 + lid) * rows + r] = red[lid][0];
		barrier();
	}
}

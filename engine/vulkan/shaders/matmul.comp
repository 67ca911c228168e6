#version 450
// Y[t][r] = dot(row row0+r of W, X[t]) for t < n: one workgroup per row;
// each invocation accumulates a strided slice of the row for up to 8
// vectors at a time, then a shared-memory tree reduction. row0 lets one
// buffer hold several matrices (Q, K and V; gate and up) end to end.
//
// Built with FUSED (matmulf_<what>_<type>), it also folds in the work
// around a matrix product, so a llama decode step needs six dispatches a
// layer; what is fixed at compile time, so each variant's loop is as
// plain as the unfused one's: NORM, the RMSNorm of its input (W·(X[t]·G)
// times 1/rms(X[t]), the sum of squares taken in the same loop, since the
// scale comes out of the sum); ADD, a residual add (Y +=); GATED, SwiGLU's gate (each
// workgroup takes rows r and rows+r — gate and up — and writes
// silu(gate)·up). Fused variants reduce with subgroup adds and one
// barrier to join the subgroups (the fused path runs only on devices with
// subgroup arithmetic).
#include "common.glsl"
#include "weights.glsl"
#ifdef FUSED
#extension GL_KHR_shader_subgroup_arithmetic : enable
#endif
// NV sums per vector group: the product(s), and the sum of squares for NORM
#if defined(GATED) && defined(NORM)
#define NV 24u
#elif defined(GATED) || defined(NORM)
#define NV 16u
#else
#define NV 8u
#endif
#ifdef GATED
#define SS 16u
#else
#define SS 8u
#endif
layout(local_size_x = 64) in;
layout(std430, binding = 1) readonly buffer Xb { float X[]; };
#ifdef ADD
layout(std430, binding = 2) buffer Yb { float Y[]; };
#else
layout(std430, binding = 2) writeonly buffer Yb { float Y[]; };
#endif
#ifdef NORM
layout(std430, binding = 3) readonly buffer Gb { float G[]; };
#endif
shared float red[NV][64];

// sum sets v[j] to the sum of v[j] over the workgroup, for the j with
// (j mod 8) < nt.
void sum(inout float v[NV], uint nt) {
	uint lid = gl_LocalInvocationID.x;
#ifdef FUSED
	[[unroll]] for (uint j = 0u; j < NV; j++) {
		if ((j & 7u) < nt) {
			float s = subgroupAdd(v[j]);
			if (gl_SubgroupInvocationID == 0u) red[j][gl_SubgroupID] = s;
		}
	}
	barrier();
	[[unroll]] for (uint j = 0u; j < NV; j++) {
		if ((j & 7u) < nt) {
			float s = 0.0;
			for (uint g = 0u; g < gl_NumSubgroups; g++) s += red[j][g];
			v[j] = s;
		}
	}
#else
	[[unroll]] for (uint j = 0u; j < NV; j++) red[j][lid] = v[j];
	barrier();
	for (uint s = 32u; s > 0u; s >>= 1) {
		if (lid < s) {
			[[unroll]] for (uint j = 0u; j < NV; j++) red[j][lid] += red[j][lid + s];
		}
		barrier();
	}
	[[unroll]] for (uint j = 0u; j < NV; j++) v[j] = red[j][0];
#endif
	barrier();
}

// pc: 0 rows, 1 cols, 2 n, 3 row0; FUSED: 4 eps, 5 X offset
void main() {
	uint rows = PU(0), cols = PU(1), n = PU(2);
	uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * 65535u;
	if (r >= rows) return;
	uint lid = gl_LocalInvocationID.x;
	uint xo = 0u;
#ifdef FUSED
	xo = PU(5);
#endif
	uint rowOff = (PU(3) + r) * rowBytes(cols);
#ifdef GATED
	uint upOff = (PU(3) + rows + r) * rowBytes(cols);
#endif
	for (uint t0 = 0u; t0 < n; t0 += 8u) {
		uint nt = min(8u, n - t0);
		float v[NV];
		[[unroll]] for (uint j = 0u; j < NV; j++) v[j] = 0.0;
		for (uint k = lid; k < cols; k += 64u) {
			float w = wget(rowOff, k);
#ifdef GATED
			float u = wget(upOff, k);
#endif
#ifdef NORM
			float g = G[k];
#endif
			[[unroll]] for (uint j = 0u; j < 8u; j++) {
				if (j < nt) {
					float x = X[xo + (t0 + j) * cols + k];
#ifdef NORM
					v[SS + j] += x * x;
					x *= g;
#endif
					v[j] += w * x;
#ifdef GATED
					v[8u + j] += u * x;
#endif
				}
			}
		}
		sum(v, nt);
		if (lid < nt) {
			float y = v[0];
			[[unroll]] for (uint j = 1u; j < 8u; j++) if (lid == j) y = v[j];
#ifdef NORM
			float ss = v[SS];
			[[unroll]] for (uint j = 1u; j < 8u; j++) if (lid == j) ss = v[SS + j];
			float scale = 1.0 / sqrt(ss / float(cols) + PF(4));
			y *= scale;
#endif
#ifdef GATED
			float up = v[8];
			[[unroll]] for (uint j = 1u; j < 8u; j++) if (lid == j) up = v[8u + j];
#ifdef NORM
			up *= scale;
#endif
			y = y / (1.0 + exp(-y)) * up;
#endif
			uint yi = (t0 + lid) * rows + r;
#ifdef ADD
			Y[yi] += y;
#else
			Y[yi] = y;
#endif
		}
	}
}

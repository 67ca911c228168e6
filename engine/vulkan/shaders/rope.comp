#version 450
// Rotary position embedding in place on n rows of `heads` heads. mode 0
// (NORM) rotates (x[i], x[i+1]); mode 1 (NEOX) rotates (x[i], x[i+dims/2]).
// theta = pos * base^(-2i/dims), computed directly (not incrementally).
#include "common.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Xb { float X[]; };
// pc: 0 heads, 1 headDim, 2 dims, 3 pos0, 4 n, 5 base, 6 mode, 7 rowStride
void main() {
	uint heads = PU(0), hd = PU(1), dims = PU(2), n = PU(4), half_ = dims / 2u;
	uint i = gl_GlobalInvocationID.x;
	if (i >= n * heads * half_) return;
	uint t = i / (heads * half_), h = (i / half_) % heads, p = i % half_;
	float theta = float(PU(3) + t) * pow(PF(5), -2.0 * float(p) / float(dims));
	float c = cos(theta), s = sin(theta);
	uint base = t * PU(7) + h * hd;
	uint a = PU(6) == 0u ? base + 2u * p : base + p;
	uint b = PU(6) == 0u ? a + 1u : a + half_;
	float x0 = X[a], x1 = X[b];
	X[a] = x0 * c - x1 * s;
	X[b] = x0 * s + x1 * c;
}

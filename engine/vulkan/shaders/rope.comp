#version 450
// Rotary position embedding in place on n rows of `heads` heads. mode 0
// (NORM) rotates (x[i], x[i+1]); mode 1 (NEOX) rotates (x[i], x[i+dims/2]).
// theta = pos * base^(-2i/dims), computed directly (not incrementally),
// divided by pair i's frequency factor F[i] when there are factors, then
// scaled as ggml's rope_yarn: interpolated by freqScale, mixed back
// toward the unscaled angle by YaRN's ramp when ext != 0, cos and sin
// times attnFactor (and YaRN's magnitude term).
#include "common.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Xb { float X[]; };
layout(std430, binding = 1) readonly buffer Fb { float F[]; };
// pc: 0 heads, 1 headDim, 2 dims, 3 pos0, 4 n, 5 base, 6 mode, 7 rowStride,
// 8 freqScale, 9 ext, 10 attnFactor, 11 corr0, 12 corr1, 13 has factors
void main() {
	uint heads = PU(0), hd = PU(1), dims = PU(2), n = PU(4), half_ = dims / 2u;
	uint i = gl_GlobalInvocationID.x;
	if (i >= n * heads * half_) return;
	uint t = i / (heads * half_), h = (i / half_) % heads, p = i % half_;
	float extrap = float(PU(3) + t) * pow(PF(5), -2.0 * float(p) / float(dims));
	if (PU(13) != 0u) extrap /= F[p];
	float theta = PF(8) * extrap, mscale = PF(10);
	if (PF(9) != 0.0) {
		float y = (float(p) - PF(11)) / max(0.001, PF(12) - PF(11));
		float ramp = (1.0 - min(1.0, max(0.0, y))) * PF(9);
		theta = theta * (1.0 - ramp) + extrap * ramp;
		mscale *= 1.0 + 0.1 * log(1.0 / PF(8));
	}
	float c = cos(theta) * mscale, s = sin(theta) * mscale;
	uint base = t * PU(7) + h * hd;
	uint a = PU(6) == 0u ? base + 2u * p : base + p;
	uint b = PU(6) == 0u ? a + 1u : a + half_;
	float x0 = X[a], x1 = X[b];
	X[a] = x0 * c - x1 * s;
	X[b] = x0 * s + x1 * c;
}

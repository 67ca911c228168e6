#version 450
// O[t][h][d] = sum over j of S[t][h][j] * V[j][h/group][d].
#include "common.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Sb { float S[]; };
layout(std430, binding = 1) readonly buffer Vb { float V[]; };
layout(std430, binding = 2) writeonly buffer Ob { float O[]; };
// pc: 0 heads, 1 kvHeads, 2 headDim, 3 ctx, 4 pos0, 5 n, 7 outStride, 8 kvDim
void main() {
	uint heads = PU(0), hd = PU(2), ctx = PU(3), n = PU(5);
	uint i = gl_GlobalInvocationID.x;
	if (i >= n * heads * hd) return;
	uint t = i / (heads * hd), h = (i / hd) % heads, d = i % hd;
	uint kh = h / (heads / PU(1));
	uint srow = (t * heads + h) * ctx;
	uint visible = PU(4) + t + 1u;
	float acc = 0.0;
	for (uint j = 0u; j < visible; j++) acc += S[srow + j] * V[j * PU(8) + kh * hd + d];
	O[t * PU(7) + h * hd + d] = acc;
}

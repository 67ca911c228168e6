#version 450
// Embedding lookup: Out[t][i] (+)= row IDS[t] of W, decoded.
#include "common.glsl"
#include "weights.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 1) readonly buffer Ib { uint IDS[]; };
layout(std430, binding = 2) buffer Ob { float O[]; };
// pc: 0 cols, 1 n, 2 add (0: overwrite, 1: add)
void main() {
	uint cols = PU(0), n = PU(1);
	uint i = gl_GlobalInvocationID.x;
	if (i >= cols * n) return;
	uint t = i / cols, k = i % cols;
	float v = wget(IDS[t] * rowBytes(cols), k);
	O[i] = PU(2) != 0u ? O[i] + v : v;
}

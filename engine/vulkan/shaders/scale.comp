#version 450
// X = X * s, elementwise (gemma's embedding times sqrt(width)).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Xb { float X[]; };
// pc: 0 count, 1 s
void main() {
	uint i = gl_GlobalInvocationID.x;
	if (i >= PU(0)) return;
	X[i] *= PF(1);
}

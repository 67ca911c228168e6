#version 450
// X[i] += Y[i % ylen]: residual adds (ylen = count) and bias rows (ylen = width).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Xb { float X[]; };
layout(std430, binding = 1) readonly buffer Yb { float Y[]; };
// pc: 0 count, 1 ylen
void main() {
	uint i = gl_GlobalInvocationID.x;
	if (i >= PU(0)) return;
	X[i] += Y[i % PU(1)];
}

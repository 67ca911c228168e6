#version 450
// A = silu(A) * B, elementwise.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Ab { float A[]; };
layout(std430, binding = 1) readonly buffer Bb { float B[]; };
void main() {
	uint i = gl_GlobalInvocationID.x;
	if (i >= PU(0)) return;
	float a = A[i];
	A[i] = a / (1.0 + exp(-a)) * B[i];
}

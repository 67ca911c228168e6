#version 450
// A = gelu(A) * B, elementwise (gemma's gated MLP).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Ab { float A[]; };
layout(std430, binding = 1) readonly buffer Bb { float B[]; };
void main() {
	uint i = gl_GlobalInvocationID.x;
	if (i >= PU(0)) return;
	A[i] = gelu_tanh(A[i]) * B[i];
}

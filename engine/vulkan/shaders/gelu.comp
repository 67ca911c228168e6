#version 450
// A = gelu(A) with GPT-2's tanh approximation, elementwise.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Ab { float A[]; };
void main() {
	uint i = gl_GlobalInvocationID.x;
	if (i >= PU(0)) return;
	A[i] = gelu_tanh(A[i]);
}

#version 450
// A = gelu(A) with GPT-2's tanh approximation, elementwise.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Ab { float A[]; };
void main() {
	uint i = gl_GlobalInvocationID.x;
	if (i >= PU(0)) return;
	float x = A[i];
	float u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
	// tanh via exp, clamped so exp cannot overflow
	float e = exp(-2.0 * clamp(u, -15.0, 15.0));
	A[i] = 0.5 * x * (1.0 + (1.0 - e) / (1.0 + e));
}

#version 450
// X = cap * tanh(X / cap), elementwise; -inf (a masked score) stays -inf.
// tanh through exp, clamped so exp cannot overflow.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Xb { float X[]; };
// pc: 0 count, 1 cap
void main() {
	uint i = gl_GlobalInvocationID.x;
	if (i >= PU(0)) return;
	float x = X[i], cap = PF(1);
	if (isinf(x) && x < 0.0) return;
	float e = exp(-2.0 * clamp(x / cap, -15.0, 15.0));
	X[i] = cap * (1.0 - e) / (1.0 + e);
}

#version 450
// Xr = X rounded to 8 bits in blocks of QK values (see round.glsl), so a
// product with Q8_0, Q5_0 or K-quant rows multiplies the numbers the
// CPU's does. One invocation per block.
#include "common.glsl"
#include "round.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Xb { float X[]; };
layout(std430, binding = 1) writeonly buffer Rb { float Xr[]; };
// pc: 0 blocks, 1 X's first float
void main() {
	uint b = gl_GlobalInvocationID.x;
	if (b >= PU(0)) return;
	uint xo = PU(1) + b * QK, ro = b * QK;
	float amax = 0.0;
	for (uint i = 0u; i < QK; i++) amax = max(amax, abs(X[xo + i]));
	float id = roundInv(amax), d = roundD(amax);
	for (uint i = 0u; i < QK; i++) Xr[ro + i] = d * roundEven(X[xo + i] * id);
}

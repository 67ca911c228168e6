// Shared by every shader: push constants are 16 words; floats travel as
// their bits. Weights are read as 32-bit words, so any block layout (Q8_0's
// 34-byte blocks included) is decoded here without 8/16-bit storage.
#extension GL_EXT_control_flow_attributes : enable

layout(push_constant) uniform PC { uint p[16]; } pc;

#define PU(i) pc.p[i]
#define PF(i) uintBitsToFloat(pc.p[i])

// gelu_tanh is GPT-2's tanh approximation of GELU, written as
// x·sigmoid(2u) (the same function, without 1 + tanh's cancellation for
// negative x; clamped so exp cannot overflow), as the CPU computes it.
float gelu_tanh(float x) {
	float u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
	return x / (1.0 + exp(-2.0 * clamp(u, -15.0, 15.0)));
}

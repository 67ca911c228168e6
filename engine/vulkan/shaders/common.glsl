// Shared by every shader: push constants are 16 words; floats travel as
// their bits. Weights are read as 32-bit words, so any block layout (Q8_0's
// 34-byte blocks included) is decoded here without 8/16-bit storage.
#extension GL_EXT_control_flow_attributes : enable

layout(push_constant) uniform PC { uint p[16]; } pc;

#define PU(i) pc.p[i]
#define PF(i) uintBitsToFloat(pc.p[i])

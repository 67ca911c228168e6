#version 450
// An intervention (package intervene) on n rows of X: columns
// [lo, lo+width) of each row whose position matches, zeroed, scaled,
// replaced by V[voff..] or added to by factor × V[voff..].
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Xb { float X[]; };
layout(std430, binding = 1) readonly buffer Vb { float V[]; };
// pc: 0 rows, 1 stride, 2 lo, 3 width, 4 pos0, 5 pos (0xffffffff: every row),
//     6 op (1 zero, 2 scale, 3 replace, 4 add), 7 factor, 8 voff
void main() {
	uint i = gl_GlobalInvocationID.x;
	uint w = PU(3);
	if (i >= PU(0) * w) return;
	uint t = i / w, j = i % w;
	if (PU(5) != 0xffffffffu && PU(4) + t != PU(5)) return;
	uint k = t * PU(1) + PU(2) + j;
	uint op = PU(6);
	if (op == 1u) {
		X[k] = 0.0;
	} else if (op == 2u) {
		X[k] *= PF(7);
	} else if (op == 3u) {
		X[k] = V[PU(8) + j];
	} else {
		X[k] += PF(7) * V[PU(8) + j];
	}
}

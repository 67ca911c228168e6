#version 450
// After the fused Q·K·V product: each element of QKV[t] (Q, then K, then
// V) goes to its place — Q rotated (RoPE) into Qo, K rotated into the key
// cache and V copied into the value cache at position pos0 + P[0] + t —
// in one dispatch instead of two rotations and two copies. Each
// invocation reads its pair from QKV and writes only its own element, with
// rope.comp's angle, so the two paths rotate alike.
#include "common.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Sb { float S[]; };
layout(std430, binding = 1) writeonly buffer Qb { float Qo[]; };
layout(std430, binding = 2) writeonly buffer Kb { float Kc[]; };
layout(std430, binding = 3) writeonly buffer Vb { float Vc[]; };
layout(std430, binding = 4) readonly buffer Pb { uint P[]; };

// rot is element d of a head starting at S[base], rotated for position pos.
float rot(uint base, uint d, uint pos) {
	uint dims = PU(3), half_ = dims / 2u;
	if (d >= dims) return S[base + d];
	uint p, a;
	bool second;
	if (PU(7) == 0u) { p = d / 2u; second = (d & 1u) != 0u; a = base + 2u * p; }
	else { second = d >= half_; p = second ? d - half_ : d; a = base + p; }
	uint b = PU(7) == 0u ? a + 1u : a + half_;
	float theta = float(pos) * pow(PF(6), -2.0 * float(p) / float(dims));
	float c = cos(theta), s = sin(theta);
	float x0 = S[a], x1 = S[b];
	return second ? x0 * s + x1 * c : x0 * c - x1 * s;
}

// pc: 0 heads, 1 kvHeads, 2 headDim, 3 rope dims, 4 pos0, 5 n, 6 base,
// 7 mode (0 NORM, 1 NEOX), 8 QD, 9 KVD
void main() {
	uint hd = PU(2), n = PU(5), QD = PU(8), KVD = PU(9), W = QD + 2u * KVD;
	uint i = gl_GlobalInvocationID.x;
	if (i >= n * W) return;
	uint t = i / W, e = i % W, pos = PU(4) + P[0] + t;
	uint row = t * W;
	if (e < QD) {
		Qo[t * QD + e] = rot(row + (e / hd) * hd, e % hd, pos);
	} else if (e < QD + KVD) {
		uint f = e - QD;
		Kc[pos * KVD + f] = rot(row + QD + (f / hd) * hd, f % hd, pos);
	} else {
		uint f = e - QD - KVD;
		Vc[pos * KVD + f] = S[row + e];
	}
}

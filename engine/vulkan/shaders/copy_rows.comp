#version 450
// Dst[dstOff + t*dstStride + k] = Src[srcOff + t*srcStride + k] for
// k < width, t < n: KV-cache append and splitting fused QKV rows.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Sb { float Src[]; };
layout(std430, binding = 1) writeonly buffer Db { float Dst[]; };
// pc: 0 width, 1 n, 2 srcOff, 3 srcStride, 4 dstOff, 5 dstStride
void main() {
	uint w = PU(0), i = gl_GlobalInvocationID.x;
	if (i >= w * PU(1)) return;
	uint t = i / w, k = i % w;
	Dst[PU(4) + t * PU(5) + k] = Src[PU(2) + t * PU(3) + k];
}

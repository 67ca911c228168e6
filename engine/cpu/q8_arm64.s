//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// The activations rounded to 8 bits, bit for bit as quantizeQ80Go and
// quantizeQ8KGo round them: the scale by FDIV, q = x·(127/max) rounded to
// nearest, ties to even, by FCVTNS (|q| ≤ 127, so SQXTN's saturation
// never acts).

// ABSMAX32 leaves in V16 the lane-wise max of |V0|–|V7| (V16–V23 used).
#define ABSMAX32 \
	VFABS4S(16, 0) \
	VFABS4S(17, 1) \
	VFABS4S(18, 2) \
	VFABS4S(19, 3) \
	VFABS4S(20, 4) \
	VFABS4S(21, 5) \
	VFABS4S(22, 6) \
	VFABS4S(23, 7) \
	VFMAX4S(16, 16, 17) \
	VFMAX4S(18, 18, 19) \
	VFMAX4S(20, 20, 21) \
	VFMAX4S(22, 22, 23) \
	VFMAX4S(16, 16, 18) \
	VFMAX4S(20, 20, 22) \
	VFMAX4S(16, 16, 20)

// ROUND16 rounds V(a)–V(a+3) times V24 to int32 in V(r)–V(r+3) and
// narrows them to sixteen int8 in V(n) (V(t) as scratch).
#define ROUND16(a, r, n, t) \
	VFMUL4S(r, a, 24) \
	VFMUL4S(r+1, a+1, 24) \
	VFMUL4S(r+2, a+2, 24) \
	VFMUL4S(r+3, a+3, 24) \
	VFCVTNS4S(r, r) \
	VFCVTNS4S(r+1, r+1) \
	VFCVTNS4S(r+2, r+2) \
	VFCVTNS4S(r+3, r+3) \
	VSQXTN4H(n, r) \
	VSQXTN28H(n, r+1) \
	VSQXTN4H(t, r+2) \
	VSQXTN28H(t, r+3) \
	VSQXTN8B(n, n) \
	VSQXTN216B(n, t)

// BACK4 writes V(r)–V(r+3) (int32; named v0–v3) times V25 to back at R4,
// moving on.
#define BACK4(r, v0, v1, v2, v3) \
	VSCVTF4S(r, r) \
	VSCVTF4S(r+1, r+1) \
	VSCVTF4S(r+2, r+2) \
	VSCVTF4S(r+3, r+3) \
	VFMUL4S(r, 25, r) \
	VFMUL4S(r+1, 25, r+1) \
	VFMUL4S(r+2, 25, r+2) \
	VFMUL4S(r+3, 25, r+3) \
	VST1.P [v0.S4, v1.S4, v2.S4, v3.S4], 64(R4)

// func quantizeQ80NEON(x *float32, q *int8, d *float32, blocks int, back *float32)
// Per 32 values: d = max|x|/127 rounded to binary16 and back (FCVT), q =
// x·(127/max) (0 for a block of zeros); with back ≠ nil, back = d·q.
TEXT ·quantizeQ80NEON(SB), NOSPLIT, $0-40
	MOVD  x+0(FP), R0
	MOVD  q+8(FP), R1
	MOVD  d+16(FP), R2
	MOVD  blocks+24(FP), R3
	MOVD  back+32(FP), R4
	FMOVS $(127.0), F26

q80block:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]
	ABSMAX32
	FMAXV4S(16, 16)
	FDIVS  F26, F16, F25  // max/127
	FCVTSH F25, F25
	FCVTHS F25, F25
	FMOVS.P F25, 4(R2)
	FMOVS  ZR, F24
	FCMPS  $(0.0), F16
	BEQ    q80zero
	FDIVS  F16, F26, F24  // 127/max

q80zero:
	VDUP V24.S[0], V24.S4
	VDUP V25.S[0], V25.S4
	ROUND16(0, 16, 28, 27)
	ROUND16(4, 20, 29, 27)
	VST1.P [V28.B16, V29.B16], 32(R1)
	CBZ    R4, q80next
	BACK4(16, V16, V17, V18, V19)
	BACK4(20, V20, V21, V22, V23)

q80next:
	SUBS $1, R3
	BNE  q80block
	RET

// func quantizeQ8KNEON(x *float32, q *int8, bs *int16, d *float32, blocks int)
// Per 256 values: d = max|x|/127, q = x·(127/max), and bs the sums of q
// over each 16; a block of zeros gets d = 0 and zeros.
TEXT ·quantizeQ8KNEON(SB), NOSPLIT, $0-40
	MOVD  x+0(FP), R0
	MOVD  q+8(FP), R1
	MOVD  bs+16(FP), R2
	MOVD  d+24(FP), R3
	MOVD  blocks+32(FP), R4
	FMOVS $(127.0), F26

kblock:
	// the block's max|x|, 32 values at a time into V31
	MOVD R0, R5
	MOVD $8, R6
	VEOR V31.B16, V31.B16, V31.B16

kmax:
	VLD1.P 64(R5), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R5), [V4.S4, V5.S4, V6.S4, V7.S4]
	ABSMAX32
	VFMAX4S(31, 31, 16)
	SUBS $1, R6
	BNE  kmax
	FMAXV4S(16, 31)
	FCMPS $(0.0), F16
	BEQ   kzero
	FDIVS F26, F16, F25   // d = max/127
	FMOVS.P F25, 4(R3)
	FDIVS F16, F26, F24   // 127/max
	VDUP  V24.S[0], V24.S4
	MOVD  $16, R6

kgroup:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	ROUND16(0, 16, 28, 27)
	VST1.P [V28.B16], 16(R1)
	VSADDLV16B(29, 28)
	FMOVS F29, R7
	MOVH.P R7, 2(R2)
	SUBS $1, R6
	BNE  kgroup
	B    knext

kzero:
	FMOVS.P F16, 4(R3)  // 0
	VEOR  V28.B16, V28.B16, V28.B16
	VEOR  V29.B16, V29.B16, V29.B16
	MOVD  $16, R6

kzeros:
	VST1.P [V28.B16], 16(R1)
	SUBS $1, R6
	BNE  kzeros
	VST1.P [V28.B16, V29.B16], 32(R2)  // bs: sixteen int16 zeros 
	ADD  $1024, R0

knext:
	SUBS $1, R4
	BNE  kblock
	RET

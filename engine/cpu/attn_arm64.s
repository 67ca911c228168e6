//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// A decode step's attention, one head over a run of cached positions, as
// attn_amd64.s does it: each score exactly what dot gives, each context
// value exactly what axpy gives, with four positions' sums reduced
// together and the head's sums kept in registers across the run.

// SHIFT4 moves the last four positions' registers on by one: V25–V27 to
// V24–V26, V(n) into V27.
#define SHIFT4(n) \
	VORR V25.B16, V25.B16, V24.B16 \
	VORR V26.B16, V26.B16, V25.B16 \
	VORR V27.B16, V27.B16, V26.B16 \
	VORR n.B16, n.B16, V27.B16

// SCORES4 reduces the four positions' registers V24–V27 into their four
// scores in V28, times the scale (V30): lanes added pairwise, as REDUCE4
// adds one register's.
#define SCORES4 \
	VFADDP4S(28, 24, 25) \
	VFADDP4S(29, 26, 27) \
	VFADDP4S(28, 28, 29) \
	VFMUL4S(28, 28, 30)

// func scoresNEON(q *float32, keys *float32, kstride int, npos int, hd int, scale float32, out *float32)
// out[j] = dot(q[:hd], keys[j·kstride:][:hd])·scale for j < npos (kstride
// in floats, hd a multiple of 4, npos > 0), each summed as dotNEON sums it:
// four accumulators added ((V0+V1)+(V2+V3)) into one register, which
// joins the last three positions' in V24–V27; every fourth position the
// four registers' lanes are added pairwise (FADDP, REDUCE4's order) into
// four scores. A last group of one to three is moved down to V24 and
// reduced the same way, only its scores stored.
TEXT ·scoresNEON(SB), NOSPLIT, $0-56
	MOVD  q+0(FP), R0
	MOVD  keys+8(FP), R1
	MOVD  kstride+16(FP), R6
	LSL   $2, R6
	MOVD  npos+24(FP), R7
	MOVD  hd+32(FP), R2
	FMOVS scale+40(FP), F30
	VDUP  V30.S[0], V30.S4
	MOVD  out+48(FP), R8
	MOVD  $0, R9

spos:
	CBZ  R7, stail
	MOVD R0, R3
	MOVD R1, R4
	MOVD R2, R5
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	CMP  $16, R5
	BLT  sfour

ssixteen:
	VLD1.P 64(R3), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R4), [V16.S4, V17.S4, V18.S4, V19.S4]
	VFMLA  V4.S4, V16.S4, V0.S4
	VFMLA  V5.S4, V17.S4, V1.S4
	VFMLA  V6.S4, V18.S4, V2.S4
	VFMLA  V7.S4, V19.S4, V3.S4
	SUB    $16, R5
	CMP    $16, R5
	BGE    ssixteen

sfour:
	CBZ R5, ssum

sfourloop:
	VLD1.P 16(R3), [V4.S4]
	VLD1.P 16(R4), [V16.S4]
	VFMLA  V4.S4, V16.S4, V0.S4
	SUBS   $4, R5
	BNE    sfourloop

ssum:
	VFADD4S(0, 0, 1)
	VFADD4S(2, 2, 3)
	VFADD4S(0, 0, 2)
	SHIFT4(V0)
	ADD  R6, R1
	SUB  $1, R7
	ADD  $1, R9
	CMP  $4, R9
	BLT  spos
	SCORES4
	VST1.P [V28.S4], 16(R8)
	MOVD $0, R9
	B    spos

stail:
	CBZ  R9, sdone
	MOVD R9, R10
	VEOR V0.B16, V0.B16, V0.B16

sshift:
	CMP  $4, R10
	BGE  sreduce
	SHIFT4(V0)
	ADD  $1, R10
	B    sshift

sreduce:
	SCORES4
	VMOV V28.S[0], R11
	MOVW R11, 0(R8)
	CMP  $2, R9
	BLT  sdone
	VMOV V28.S[1], R11
	MOVW R11, 4(R8)
	CMP  $3, R9
	BLT  sdone
	VMOV V28.S[2], R11
	MOVW R11, 8(R8)

sdone:
	RET

// func valuesNEON(acc *float32, w *float32, vals *float32, vstride int, npos int, hd int)
// acc[:hd] += w[j]·vals[j·vstride:][:hd] for j < npos in order (vstride
// in floats, hd a multiple of 4, npos > 0), each element fused (FMLA) as
// axpyNEON fuses it. The sums stay in registers for the whole run: 64
// values (V0–V15) at a time, then 16, then 4.
TEXT ·valuesNEON(SB), NOSPLIT, $0-48
	MOVD acc+0(FP), R0
	MOVD w+8(FP), R1
	MOVD vals+16(FP), R2
	MOVD vstride+24(FP), R3
	LSL  $2, R3
	MOVD npos+32(FP), R4
	MOVD hd+40(FP), R5

v64:
	CMP    $64, R5
	BLT    v16
	MOVD   R0, R6
	VLD1.P 64(R6), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R6), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R6), [V8.S4, V9.S4, V10.S4, V11.S4]
	VLD1.P 64(R6), [V12.S4, V13.S4, V14.S4, V15.S4]
	MOVD   R1, R7
	MOVD   R2, R8
	MOVD   R4, R9

v64pos:
	FMOVS  (R7), F31
	VDUP   V31.S[0], V31.S4
	MOVD   R8, R10
	VLD1.P 64(R10), [V16.S4, V17.S4, V18.S4, V19.S4]
	VLD1.P 64(R10), [V20.S4, V21.S4, V22.S4, V23.S4]
	VFMLA  V31.S4, V16.S4, V0.S4
	VFMLA  V31.S4, V17.S4, V1.S4
	VFMLA  V31.S4, V18.S4, V2.S4
	VFMLA  V31.S4, V19.S4, V3.S4
	VFMLA  V31.S4, V20.S4, V4.S4
	VFMLA  V31.S4, V21.S4, V5.S4
	VFMLA  V31.S4, V22.S4, V6.S4
	VFMLA  V31.S4, V23.S4, V7.S4
	VLD1.P 64(R10), [V16.S4, V17.S4, V18.S4, V19.S4]
	VLD1.P 64(R10), [V20.S4, V21.S4, V22.S4, V23.S4]
	VFMLA  V31.S4, V16.S4, V8.S4
	VFMLA  V31.S4, V17.S4, V9.S4
	VFMLA  V31.S4, V18.S4, V10.S4
	VFMLA  V31.S4, V19.S4, V11.S4
	VFMLA  V31.S4, V20.S4, V12.S4
	VFMLA  V31.S4, V21.S4, V13.S4
	VFMLA  V31.S4, V22.S4, V14.S4
	VFMLA  V31.S4, V23.S4, V15.S4
	ADD    $4, R7
	ADD    R3, R8
	SUBS   $1, R9
	BNE    v64pos
	MOVD   R0, R6
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R6)
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R6)
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R6)
	VST1.P [V12.S4, V13.S4, V14.S4, V15.S4], 64(R6)
	ADD    $256, R0
	ADD    $256, R2
	SUB    $64, R5
	B      v64

v16:
	CMP    $16, R5
	BLT    v4
	MOVD   R0, R6
	VLD1   (R6), [V0.S4, V1.S4, V2.S4, V3.S4]
	MOVD   R1, R7
	MOVD   R2, R8
	MOVD   R4, R9

v16pos:
	FMOVS (R7), F31
	VDUP  V31.S[0], V31.S4
	VLD1  (R8), [V16.S4, V17.S4, V18.S4, V19.S4]
	VFMLA V31.S4, V16.S4, V0.S4
	VFMLA V31.S4, V17.S4, V1.S4
	VFMLA V31.S4, V18.S4, V2.S4
	VFMLA V31.S4, V19.S4, V3.S4
	ADD   $4, R7
	ADD   R3, R8
	SUBS  $1, R9
	BNE   v16pos
	VST1  [V0.S4, V1.S4, V2.S4, V3.S4], (R6)
	ADD   $64, R0
	ADD   $64, R2
	SUB   $16, R5
	B     v16

v4:
	CMP  $4, R5
	BLT  vdone
	VLD1 (R0), [V0.S4]
	MOVD R1, R7
	MOVD R2, R8
	MOVD R4, R9

v4pos:
	FMOVS (R7), F31
	VDUP  V31.S[0], V31.S4
	VLD1  (R8), [V16.S4]
	VFMLA V31.S4, V16.S4, V0.S4
	ADD   $4, R7
	ADD   R3, R8
	SUBS  $1, R9
	BNE   v4pos
	VST1  [V0.S4], (R0)
	ADD   $16, R0
	ADD   $16, R2
	SUB   $4, R5
	B     v4

vdone:
	RET

//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// Q4_0 and Q4_1 rows times float x: each block's 32 four-bit values
// (low nibbles the first 16, high nibbles the next) widened to floats,
// multiplied by x in two running sums, and the block's sum times d added
// to a third. The order of the float additions is not dotLegacyGo's (one
// sum a block), so the results agree within rounding, not bit for bit.

// LEGACYBLOCK multiplies the 16 bytes of values at R5 (V29 subtracted
// from each: 8 for Q4_0, 0 for Q4_1) by the 32 x at R1 (moving on), and
// adds the sum times d (F27) to V26.
#define LEGACYBLOCK \
	VLD1   (R5), [V0.B16] \
	VAND   V28.B16, V0.B16, V1.B16 \
	VUSHR  $4, V0.B16, V2.B16 \
	VSUB   V29.B16, V1.B16, V1.B16 \
	VSUB   V29.B16, V2.B16, V2.B16 \
	VSXTL8H(3, 1) \
	VSXTL28H(4, 1) \
	VSXTL8H(5, 2) \
	VSXTL28H(6, 2) \
	VSXTL4S(8, 3) \
	VSXTL24S(9, 3) \
	VSXTL4S(10, 4) \
	VSXTL24S(11, 4) \
	VSXTL4S(12, 5) \
	VSXTL24S(13, 5) \
	VSXTL4S(14, 6) \
	VSXTL24S(15, 6) \
	VSCVTF4S(8, 8) \
	VSCVTF4S(9, 9) \
	VSCVTF4S(10, 10) \
	VSCVTF4S(11, 11) \
	VSCVTF4S(12, 12) \
	VSCVTF4S(13, 13) \
	VSCVTF4S(14, 14) \
	VSCVTF4S(15, 15) \
	VLD1.P 64(R1), [V16.S4, V17.S4, V18.S4, V19.S4] \
	VLD1.P 64(R1), [V20.S4, V21.S4, V22.S4, V23.S4] \
	VFMUL4S(24, 8, 16) \
	VFMUL4S(25, 9, 17) \
	VFMLA  V10.S4, V18.S4, V24.S4 \
	VFMLA  V11.S4, V19.S4, V25.S4 \
	VFMLA  V12.S4, V20.S4, V24.S4 \
	VFMLA  V13.S4, V21.S4, V25.S4 \
	VFMLA  V14.S4, V22.S4, V24.S4 \
	VFMLA  V15.S4, V23.S4, V25.S4 \
	VFADD4S(24, 24, 25) \
	VDUP   V27.S[0], V27.S4 \
	VFMLA  V27.S4, V24.S4, V26.S4

// LEGACYSTART loads the arguments and clears the sums.
#define LEGACYSTART \
	MOVD  row+0(FP), R0 \
	MOVD  x+8(FP), R1 \
	MOVD  xs+16(FP), R2 \
	MOVD  blocks+24(FP), R3 \
	VEOR  V26.B16, V26.B16, V26.B16 \
	FMOVS ZR, F30 \
	VMOVI $15, V28.B16

// LEGACYEND leaves the lanes of V26 summed, plus F30, in the result.
#define LEGACYEND \
	VFADDP4S(26, 26, 26) \
	FADDP2S(26, 26) \
	FADDS F30, F26, F26 \
	FMOVS F26, ret+32(FP) \
	RET

// func dotQ4_0NEON(row *byte, x *float32, xs *float32, blocks int) float32
// Blocks of d and 16 bytes of values q: Σ d·(q − 8)·x.
TEXT ·dotQ4_0NEON(SB), NOSPLIT, $0-36
	LEGACYSTART
	VMOVI $8, V29.B16

q40loop:
	MOVHU  (R0), R4
	FMOVS  R4, F27
	FCVTHS F27, F27
	ADD    $2, R0, R5
	ADD    $18, R0
	LEGACYBLOCK
	SUBS   $1, R3
	BNE    q40loop
	LEGACYEND

// func dotQ4_1NEON(row *byte, x *float32, xs *float32, blocks int) float32
// Blocks of d, m and 16 bytes of values q: Σ (d·q + m)·x, the m terms as
// m·(the block's sum of x, from xs) in F30.
TEXT ·dotQ4_1NEON(SB), NOSPLIT, $0-36
	LEGACYSTART
	VEOR V29.B16, V29.B16, V29.B16

q41loop:
	MOVHU   (R0), R4
	FMOVS   R4, F27
	FCVTHS  F27, F27
	MOVHU   2(R0), R4
	FMOVS   R4, F31
	FCVTHS  F31, F31
	FMOVS.P 4(R2), F24
	FMADDS  F24, F30, F31, F30
	ADD     $4, R0, R5
	ADD     $20, R0
	LEGACYBLOCK
	SUBS    $1, R3
	BNE     q41loop
	LEGACYEND

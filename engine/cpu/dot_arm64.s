//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// The float32 kernels: FMLA (fused) into four accumulators of four lanes,
// each lane summed as dotGo's ((l0+l1)+(l2+l3)) at the end. n and k are
// multiples of 4 (the callers add the rest in Go).

// ZERO4 and ZERO16 clear the accumulators V0–V3, V0–V15.
#define ZERO4 \
	VEOR V0.B16, V0.B16, V0.B16 \
	VEOR V1.B16, V1.B16, V1.B16 \
	VEOR V2.B16, V2.B16, V2.B16 \
	VEOR V3.B16, V3.B16, V3.B16

#define ZERO16 \
	ZERO4 \
	VEOR V4.B16, V4.B16, V4.B16 \
	VEOR V5.B16, V5.B16, V5.B16 \
	VEOR V6.B16, V6.B16, V6.B16 \
	VEOR V7.B16, V7.B16, V7.B16 \
	VEOR V8.B16, V8.B16, V8.B16 \
	VEOR V9.B16, V9.B16, V9.B16 \
	VEOR V10.B16, V10.B16, V10.B16 \
	VEOR V11.B16, V11.B16, V11.B16 \
	VEOR V12.B16, V12.B16, V12.B16 \
	VEOR V13.B16, V13.B16, V13.B16 \
	VEOR V14.B16, V14.B16, V14.B16 \
	VEOR V15.B16, V15.B16, V15.B16

// FMLA4 adds w0–w3 times x in V16–V19 to the accumulators a0–a3.
#define FMLA4(w0, w1, w2, w3, a0, a1, a2, a3) \
	VFMLA w0.S4, V16.S4, a0.S4 \
	VFMLA w1.S4, V17.S4, a1.S4 \
	VFMLA w2.S4, V18.S4, a2.S4 \
	VFMLA w3.S4, V19.S4, a3.S4

// REDUCE4 leaves in lane 0 of V0 the sum of V0–V3: ((V0+V1)+(V2+V3)),
// then its lanes ((l0+l1)+(l2+l3)).
#define REDUCE4 \
	VFADD4S(0, 0, 1) \
	VFADD4S(2, 2, 3) \
	VFADD4S(0, 0, 2) \
	VFADDP4S(0, 0, 0) \
	FADDP2S(0, 0)

// func dotNEON(a, b *float32, n int) float32
TEXT ·dotNEON(SB), NOSPLIT, $0-28
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD n+16(FP), R2
	ZERO4
	CMP  $16, R2
	BLT  four

sixteen:
	VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R1), [V16.S4, V17.S4, V18.S4, V19.S4]
	FMLA4(V4, V5, V6, V7, V0, V1, V2, V3)
	SUB    $16, R2
	CMP    $16, R2
	BGE    sixteen

four:
	CBZ R2, done

fourloop:
	VLD1.P 16(R0), [V4.S4]
	VLD1.P 16(R1), [V16.S4]
	VFMLA  V4.S4, V16.S4, V0.S4
	SUBS   $4, R2
	BNE    fourloop

done:
	REDUCE4
	FMOVS F0, ret+24(FP)
	RET

// GEMV4ROW multiplies 16 values of the row at r (moving it on) by x in
// V16–V19 into the accumulators a0–a3.
#define GEMV4ROW(r, a0, a1, a2, a3) \
	VLD1.P 64(r), [V20.S4, V21.S4, V22.S4, V23.S4] \
	FMLA4(V20, V21, V22, V23, a0, a1, a2, a3)

// SUM4 leaves the sum of the accumulators d, a, b, c in d:
// ((d+a)+(b+c)), lane by lane.
#define SUM4(d, a, b, c) \
	VFADD4S(d, d, a) \
	VFADD4S(b, b, c) \
	VFADD4S(d, d, b)

// func gemv4NEON(a *float32, lda int, x *float32, k int, out *float32)
// out[i] = a_i · x for the four rows a_i = a[i*lda:][:k], each summed
// exactly as dotNEON sums it.
TEXT ·gemv4NEON(SB), NOSPLIT, $0-40
	MOVD a+0(FP), R0
	MOVD lda+8(FP), R1
	MOVD x+16(FP), R2
	MOVD k+24(FP), R3
	MOVD out+32(FP), R4
	LSL  $2, R1
	ADD  R1, R0, R5
	ADD  R1, R5, R6
	ADD  R1, R6, R7
	ZERO16
	CMP  $16, R3
	BLT  gfour

gsixteen:
	VLD1.P 64(R2), [V16.S4, V17.S4, V18.S4, V19.S4]
	GEMV4ROW(R0, V0, V1, V2, V3)
	GEMV4ROW(R5, V4, V5, V6, V7)
	GEMV4ROW(R6, V8, V9, V10, V11)
	GEMV4ROW(R7, V12, V13, V14, V15)
	SUB    $16, R3
	CMP    $16, R3
	BGE    gsixteen

gfour:
	CBZ R3, gdone

gfourloop:
	VLD1.P 16(R2), [V16.S4]
	VLD1.P 16(R0), [V20.S4]
	VLD1.P 16(R5), [V21.S4]
	VLD1.P 16(R6), [V22.S4]
	VLD1.P 16(R7), [V23.S4]
	VFMLA  V20.S4, V16.S4, V0.S4
	VFMLA  V21.S4, V16.S4, V4.S4
	VFMLA  V22.S4, V16.S4, V8.S4
	VFMLA  V23.S4, V16.S4, V12.S4
	SUBS   $4, R3
	BNE    gfourloop

gdone:
	SUM4(0, 1, 2, 3)
	SUM4(4, 5, 6, 7)
	SUM4(8, 9, 10, 11)
	SUM4(12, 13, 14, 15)
	VFADDP4S(0, 0, 4)
	VFADDP4S(8, 8, 12)
	VFADDP4S(0, 0, 8)
	VST1   [V0.S4], (R4)
	RET

// func gemm4x4NEON(a *float32, lda int, x *float32, ldx int, k int, out *float32)
// out[i*4+j] = a_i · x_j for four rows each of a and x, one accumulator a
// pair (V(4i+j)), its lanes summed ((l0+l1)+(l2+l3)).
TEXT ·gemm4x4NEON(SB), NOSPLIT, $0-48
	MOVD a+0(FP), R0
	MOVD lda+8(FP), R1
	MOVD x+16(FP), R2
	MOVD ldx+24(FP), R3
	MOVD k+32(FP), R4
	MOVD out+40(FP), R5
	LSL  $2, R1
	LSL  $2, R3
	ADD  R1, R0, R6
	ADD  R1, R6, R7
	ADD  R1, R7, R8
	ADD  R3, R2, R9
	ADD  R3, R9, R10
	ADD  R3, R10, R11
	ZERO16

tile:
	VLD1.P 16(R0), [V16.S4]
	VLD1.P 16(R6), [V17.S4]
	VLD1.P 16(R7), [V18.S4]
	VLD1.P 16(R8), [V19.S4]
	VLD1.P 16(R2), [V20.S4]
	VLD1.P 16(R9), [V21.S4]
	VLD1.P 16(R10), [V22.S4]
	VLD1.P 16(R11), [V23.S4]
	VFMLA  V16.S4, V20.S4, V0.S4
	VFMLA  V16.S4, V21.S4, V1.S4
	VFMLA  V16.S4, V22.S4, V2.S4
	VFMLA  V16.S4, V23.S4, V3.S4
	VFMLA  V17.S4, V20.S4, V4.S4
	VFMLA  V17.S4, V21.S4, V5.S4
	VFMLA  V17.S4, V22.S4, V6.S4
	VFMLA  V17.S4, V23.S4, V7.S4
	VFMLA  V18.S4, V20.S4, V8.S4
	VFMLA  V18.S4, V21.S4, V9.S4
	VFMLA  V18.S4, V22.S4, V10.S4
	VFMLA  V18.S4, V23.S4, V11.S4
	VFMLA  V19.S4, V20.S4, V12.S4
	VFMLA  V19.S4, V21.S4, V13.S4
	VFMLA  V19.S4, V22.S4, V14.S4
	VFMLA  V19.S4, V23.S4, V15.S4
	SUBS   $4, R4
	BNE    tile

	// row i: FADDP twice gives [pair 0, pair 1, pair 2, pair 3]
	VFADDP4S(0, 0, 1)
	VFADDP4S(2, 2, 3)
	VFADDP4S(0, 0, 2)
	VFADDP4S(4, 4, 5)
	VFADDP4S(6, 6, 7)
	VFADDP4S(4, 4, 6)
	VFADDP4S(8, 8, 9)
	VFADDP4S(10, 10, 11)
	VFADDP4S(8, 8, 10)
	VFADDP4S(12, 12, 13)
	VFADDP4S(14, 14, 15)
	VFADDP4S(12, 12, 14)
	VST1   [V0.S4], (R5)
	ADD    $16, R5
	VST1   [V4.S4], (R5)
	ADD    $16, R5
	VST1   [V8.S4], (R5)
	ADD    $16, R5
	VST1   [V12.S4], (R5)
	RET

// func axpyNEON(dst *float32, a float32, x *float32, n int)
// dst[i] += a·x[i], fused as axpyGo's FMADD.
TEXT ·axpyNEON(SB), NOSPLIT, $0-32
	MOVD  dst+0(FP), R0
	FMOVS a+8(FP), F31
	MOVD  x+16(FP), R1
	MOVD  n+24(FP), R2
	VDUP  V31.S[0], V31.S4
	MOVD  R0, R3
	CMP   $16, R2
	BLT   afour

asixteen:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA  V31.S4, V4.S4, V0.S4
	VFMLA  V31.S4, V5.S4, V1.S4
	VFMLA  V31.S4, V6.S4, V2.S4
	VFMLA  V31.S4, V7.S4, V3.S4
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R3)
	SUB    $16, R2
	CMP    $16, R2
	BGE    asixteen

afour:
	CBZ R2, adone

afourloop:
	VLD1.P 16(R0), [V0.S4]
	VLD1.P 16(R1), [V4.S4]
	VFMLA  V31.S4, V4.S4, V0.S4
	VST1.P [V0.S4], 16(R3)
	SUBS   $4, R2
	BNE    afourloop

adone:
	RET

// func dotF16NEON(row *byte, x *float32, n int) float32
// The F16 row widened by FCVTL (exact), then as dotNEON.
TEXT ·dotF16NEON(SB), NOSPLIT, $0-28
	MOVD row+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	ZERO4
	CMP  $16, R2
	BLT  hfour

hsixteen:
	VLD1.P 32(R0), [V8.H8, V9.H8]
	VLD1.P 64(R1), [V16.S4, V17.S4, V18.S4, V19.S4]
	VFCVTL4S(4, 8)
	VFCVTL24S(5, 8)
	VFCVTL4S(6, 9)
	VFCVTL24S(7, 9)
	FMLA4(V4, V5, V6, V7, V0, V1, V2, V3)
	SUB    $16, R2
	CMP    $16, R2
	BGE    hsixteen

hfour:
	CBZ R2, hdone

hfourloop:
	VLD1.P 8(R0), [V8.H4]
	VLD1.P 16(R1), [V16.S4]
	VFCVTL4S(4, 8)
	VFMLA  V4.S4, V16.S4, V0.S4
	SUBS   $4, R2
	BNE    hfourloop

hdone:
	REDUCE4
	FMOVS F0, ret+24(FP)
	RET

// func f16ToF32NEON(src *byte, dst *float32, n int)
// n a multiple of 8: dst[i] = the binary16 value i of src (exact).
TEXT ·f16ToF32NEON(SB), NOSPLIT, $0-24
	MOVD src+0(FP), R0
	MOVD dst+8(FP), R1
	MOVD n+16(FP), R2

widen:
	VLD1.P 16(R0), [V0.H8]
	VFCVTL4S(1, 0)
	VFCVTL24S(2, 0)
	VST1.P [V1.S4, V2.S4], 32(R1)
	SUBS   $8, R2
	BNE    widen
	RET

// func dequantQ8_0NEON(row *byte, out *float32, blocks int)
// Each block of 34 bytes: d (binary16), 32 int8 q; out = d·q.
TEXT ·dequantQ8_0NEON(SB), NOSPLIT, $0-24
	MOVD row+0(FP), R0
	MOVD out+8(FP), R1
	MOVD blocks+16(FP), R2

qblock:
	MOVHU  (R0), R3
	ADD    $2, R0
	FMOVS  R3, F31
	FCVTHS F31, F31
	VDUP   V31.S[0], V31.S4
	VLD1.P 32(R0), [V0.B16, V1.B16]
	VSXTL8H(2, 0)
	VSXTL28H(3, 0)
	VSXTL8H(4, 1)
	VSXTL28H(5, 1)
	VSXTL4S(16, 2)
	VSXTL24S(17, 2)
	VSXTL4S(18, 3)
	VSXTL24S(19, 3)
	VSXTL4S(20, 4)
	VSXTL24S(21, 4)
	VSXTL4S(22, 5)
	VSXTL24S(23, 5)
	VSCVTF4S(16, 16)
	VSCVTF4S(17, 17)
	VSCVTF4S(18, 18)
	VSCVTF4S(19, 19)
	VSCVTF4S(20, 20)
	VSCVTF4S(21, 21)
	VSCVTF4S(22, 22)
	VSCVTF4S(23, 23)
	VFMUL4S(16, 31, 16)
	VFMUL4S(17, 31, 17)
	VFMUL4S(18, 31, 18)
	VFMUL4S(19, 31, 19)
	VFMUL4S(20, 31, 20)
	VFMUL4S(21, 31, 21)
	VFMUL4S(22, 31, 22)
	VFMUL4S(23, 31, 23)
	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R1)
	VST1.P [V20.S4, V21.S4, V22.S4, V23.S4], 64(R1)
	SUBS   $1, R2
	BNE    qblock
	RET

// func dotBF16NEON(row *byte, x *float32, n int) float32
// A bfloat16 row times x over n values (a multiple of 16): each half
// widened exactly by interleaving it above a zero half (ZIP1/ZIP2 with
// V31), then multiply-added as dotF16NEON does.
TEXT ·dotBF16NEON(SB), NOSPLIT, $0-28
	MOVD row+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	ZERO4
	VEOR V31.B16, V31.B16, V31.B16

bsixteen:
	VLD1.P 32(R0), [V8.H8, V9.H8]
	VLD1.P 64(R1), [V16.S4, V17.S4, V18.S4, V19.S4]
	VZIP1  V8.H8, V31.H8, V4.H8
	VZIP2  V8.H8, V31.H8, V5.H8
	VZIP1  V9.H8, V31.H8, V6.H8
	VZIP2  V9.H8, V31.H8, V7.H8
	FMLA4(V4, V5, V6, V7, V0, V1, V2, V3)
	SUBS   $16, R2
	BNE    bsixteen
	REDUCE4
	FMOVS F0, ret+24(FP)
	RET

// func bf16ToF32NEON(src *byte, dst *float32, n int)
// n bfloat16 values (a multiple of 8) to float32, exactly.
TEXT ·bf16ToF32NEON(SB), NOSPLIT, $0-24
	MOVD src+0(FP), R0
	MOVD dst+8(FP), R1
	MOVD n+16(FP), R2
	VEOR V31.B16, V31.B16, V31.B16

bwiden:
	VLD1.P 16(R0), [V0.H8]
	VZIP1  V0.H8, V31.H8, V1.H8
	VZIP2  V0.H8, V31.H8, V2.H8
	VST1.P [V1.S4, V2.S4], 32(R1)
	SUBS   $8, R2
	BNE    bwiden
	RET
